"""Helpers for the `--diff-ui-alpha` tests: a command that serves the diff UI, run in the background while the test
reads the URL it printed, and the Chromium that opens it (Debian's package, `make browser`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

URL_LINE = re.compile(r"^Diff UI server: (http://\S+)$", re.M)


def chromium() -> Path:
    """The browser: the path `$KAPPLY_CHROMIUM` names (`make test` sets it; a missing file there fails the test: it was
    told where the browser is), else /usr/bin/chromium or `chromium` on PATH; skips the test when there is none."""
    named = os.environ.get("KAPPLY_CHROMIUM")
    if named:
        path = Path(named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"$KAPPLY_CHROMIUM names {named}, which is not an executable file (make browser installs it)")
        return path
    found = shutil.which("chromium") or shutil.which("/usr/bin/chromium")
    if found is None:
        pytest.skip("chromium is not installed (make browser) and $KAPPLY_CHROMIUM is not set")
    return Path(found)


@contextmanager
def headless_chromium() -> Iterator[Browser]:
    """chromium(), launched headless under Playwright; closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium()), headless=True)
        yield launched
        launched.close()


@dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str


class Serving:
    """A command started in the background with its output read as it comes, so that the test can wait for the
    `Diff UI server: <URL>` lines it prints, and then for its end."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], input: str | None = None) -> None:
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdin is not None
        if input is not None:
            self.process.stdin.write(input)
        self.process.stdin.close()
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self._stdout), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self._stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line)

    @property
    def stdout(self) -> str:
        return "".join(self._stdout)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def url(self, number: int = 1, timeout: float = 90) -> str:
        """The URL of the `number`th `Diff UI server:` line (app-group commands print one per app)."""
        deadline = time.monotonic() + timeout
        while True:
            ended = self.process.poll() is not None
            if ended:
                for reader in self._readers:
                    reader.join(10)
            found = URL_LINE.findall(self.stdout)
            if len(found) >= number:
                return str(found[number - 1])
            if ended:
                pytest.fail(f"the command ended ({self.process.returncode}) before printing a URL:\n{self.output}")
            if time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"no `Diff UI server:` line in {timeout}s:\n{self.output}")
            time.sleep(0.05)

    @property
    def output(self) -> str:
        return f"{self.stdout}\n== stderr\n{self.stderr}"

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def finish(self, timeout: float = 120) -> Finished:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail(f"the command did not end in {timeout}s:\n{self.output}")
        for reader in self._readers:
            reader.join(10)
        return Finished(code, self.stdout, self.stderr)

    def stop(self) -> None:
        """Kill it if it still runs (a failed test's clean-up)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def post(url: str, **headers: str) -> int:
    """POST to the UI server as a script (or another local user) would; the answer's status."""
    request = urllib.request.Request(url, data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def get(url: str, **headers: str) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
