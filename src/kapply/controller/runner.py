"""The programs the controller runs to fetch and template (git, ytt, kustomize, helm, kbld): found through an
environment variable or PATH, run with a time limit, their output captured. kapp-controller bundles them; kapply uses
the ones the machine (or the controller's image) has, and says clearly when one is missing.

Everything a tool reads comes from an App's author, and the controller holds far more rights than that author: a tool
runs with an allow-listed environment (no kubeconfig, no credentials of the controller's, no proxy passwords), an
empty temporary HOME, in its own process group (killed whole at its time limit), and its output is bounded: a tool
that prints more than MAX_STDOUT bytes is killed, and only the last MAX_STDERR bytes of what it says are kept.

In the sandbox (sandbox.py) a tool also inherits its job's limits (memory, CPU, file size: a tool that breaks one is
said to have, with the limit), dies with its job's process, and the template tools that need no network (ytt, helm
template, kustomize) run in a network namespace of their own when the kernel allows it (`configure`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import signal
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from kapply import programs
from kapply.controller import confine
from kapply.errors import KapplyError

TIMEOUT = 300.0
MAX_STDOUT = 64 << 20  # bytes: the YAML a template step prints, the listing git prints
MAX_STDERR = 16 << 10  # bytes: the tail of what a tool says, shown in the App's status
_CHUNK = 64 << 10
_HEAD = 4 << 10

# Variables a tool may inherit from the controller's environment: where programs are, the locale and time zone, where
# temporary files and CA certificates go. Everything else (KUBECONFIG, KAPP_*, AWS_*, GOOGLE_*, SSH_AUTH_SOCK, GIT_*,
# the controller's HOME ...) stays with the controller.
ALLOWED = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"})
# Proxies are passed on without the user and password they may carry: an App's tools may use the way out, not the
# controller's account on it.
PROXIES = frozenset({"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})
NO_PROXY = frozenset({"no_proxy", "NO_PROXY"})
# Template tools that never need the network: kustomize's remote bases and helm's repositories are refused anyway (a
# network namespace makes that structural); git fetches, and kbld asks registries for the digests of tags.
OFFLINE = frozenset({"ytt", "helm", "kustomize"})


@dataclass(slots=True)
class _Confinement:
    """How this process confines the OFFLINE tools it runs (set in a sandbox job: confine.py)."""

    confinements: frozenset[confine.Confinement] = frozenset()
    job: str | None = None  # the job's directory: all of the machine's files a confined tool sees beyond SYSTEM
    viewed: bool = False  # the job's process is in its fetch view (confine.enter_fetch_view)


_CONFINEMENT = _Confinement()


def _found(tools: Iterable[str]) -> list[str]:
    programs = []
    for tool in tools:
        with contextlib.suppress(ToolError):  # a missing tool fails its step, with its message
            programs.append(find(tool))
    return programs


def confine_fetch_stage(tools: Iterable[str], own_disk: bool) -> None:
    """Confine this job's process before its fetch to its fetch view (confine.enter_fetch_view: the system's
    programs, git and the template `tools`, the job's directory, and what a fetcher needs of /etc), which every tool
    it starts inherits; unless its fetchers may read the controller's own disk (`own_disk`: file:// URLs, the
    controller's --dangerous-allow-file-urls)."""
    allowed, job = _CONFINEMENT.confinements, _CONFINEMENT.job
    if job is None or confine.Confinement.FILES not in allowed or own_disk:
        return
    confine.enter_fetch_view(_found([*tools, "git"]), job)
    _CONFINEMENT.viewed = True
    configure(allowed - {confine.Confinement.FILES}, job)  # a tool started now adds only a network namespace


def confine_template_stage(tools: Iterable[str]) -> None:
    """Confine this job's process before its template stage, which runs `tools`: when all are OFFLINE, without
    network and in a view of the files without /etc, which its tools then inherit with nothing of their own to set up
    (a kbld step needs the network and the CA certificates, so then each OFFLINE tool is confined as it starts)."""
    allowed, job = _CONFINEMENT.confinements, _CONFINEMENT.job
    offline = set(tools) <= OFFLINE
    if _CONFINEMENT.viewed:
        if offline:
            confine.leave_network(allowed)
            configure(frozenset(), job)
        return
    if job is None or confine.Confinement.FILES not in allowed or not offline:
        return
    confine.enter_job_view(allowed, _found(tools), job)
    configure(frozenset(), job)


def configure(confinements: frozenset[confine.Confinement], job: str | None = None) -> None:
    """Confine the OFFLINE tools this process runs (the sandbox sets it from what the kernel allows)."""
    _CONFINEMENT.confinements, _CONFINEMENT.job = confinements, job


def memory_message(memory: int | None = None) -> str:
    memory = resource.getrlimit(resource.RLIMIT_DATA)[0] if memory is None else memory
    return f"ran out of memory (the sandbox's limit is {memory} bytes per process, --sandbox-memory-mib)"


def cpu_message(cpu: int | None = None) -> str:
    cpu = resource.getrlimit(resource.RLIMIT_CPU)[0] if cpu is None else cpu
    return f"used more than the sandbox's {cpu} s of CPU (--sandbox-cpu)"


def processes_message(processes: int | None = None) -> str:
    processes = resource.getrlimit(resource.RLIMIT_NPROC)[0] if processes is None else processes
    return f"could not start a process: its user has the sandbox's {processes} processes already"


# What shells, Go's runtime and git say when fork or clone fails with EAGAIN (RLIMIT_NPROC)
_NO_PROCESS = re.compile(
    r"(fork|clone)[^\n]*Resource temporarily unavailable|failed to create new OS thread|cannot fork|can't fork"
    r"|unable to fork",
    re.IGNORECASE,
)


def _broke_limit(returncode: int, stderr: str) -> str:
    """What a failed tool's exit says of the process's limits: "" when nothing (a limit not set says nothing)."""
    if resource.getrlimit(resource.RLIMIT_NPROC)[0] != resource.RLIM_INFINITY and _NO_PROCESS.search(stderr):
        return processes_message()
    if resource.getrlimit(resource.RLIMIT_DATA)[0] != resource.RLIM_INFINITY and (
        "out of memory" in stderr.lower() or "cannot allocate memory" in stderr.lower() or "MemoryError" in stderr
    ):
        return memory_message()
    if resource.getrlimit(resource.RLIMIT_CPU)[0] != resource.RLIM_INFINITY and (
        returncode in (-signal.SIGXCPU, -signal.SIGKILL) or "SIGXCPU" in stderr
    ):
        return cpu_message()
    return ""


class ToolError(KapplyError):
    """A program failed or is not available; `stderr` is what it said."""

    def __init__(self, message: str, stderr: str = "", exit_code: int = -1) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Ran:
    stdout: str
    stderr: str


def find(tool: str) -> str:
    """The path of `tool`: $KAPPLY_<TOOL> (which must then exist) or PATH."""
    try:
        return programs.find(tool)
    except programs.ProgramNotFound as e:
        raise ToolError(str(e)) from None


def without_userinfo(url: str) -> str:
    """A proxy URL without `user:password@`; a value that is not a URL (`proxy:3128`) is kept unless it has an `@`,
    in which case only what follows it is."""
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    return url.rsplit("@", 1)[-1]


def environment(inherited: Mapping[str, str], home: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a tool: the allow-listed variables of `inherited`, proxies without credentials, HOME set to
    `home` (an empty directory), then `extra` (what the caller sets for this run: git's askpass, helm's homes)."""
    env = {k: v for k, v in inherited.items() if k in ALLOWED or k.startswith("LC_") or k in NO_PROXY}
    env |= {k: without_userinfo(v) for k, v in inherited.items() if k in PROXIES}
    env["HOME"] = home
    return env | dict(extra or {})


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the tool and whatever it started (git's remote helpers, ssh): they share its process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class _Captured:
    data: bytes
    over: bool  # the stream went past its limit
    head: bytes = b""  # its first _HEAD bytes: where Go says it ran out of memory, before a dump of every goroutine


async def _read(stream: asyncio.StreamReader, limit: int, process: asyncio.subprocess.Process | None) -> _Captured:
    """What `stream` carries. Past `limit` bytes: with `process`, the process is killed (its output is refused
    whole); without, only the last `limit` bytes are kept (a tail)."""
    kept = bytearray()
    head = b""
    over = False
    while chunk := await stream.read(_CHUNK):
        kept += chunk
        if len(head) < _HEAD:
            head += chunk[: _HEAD - len(head)]
        if len(kept) > limit:
            over = True
            if process is not None:
                _kill(process)
                return _Captured(b"", over)
            del kept[: len(kept) - limit]
    return _Captured(bytes(kept), over, head)


async def _feed(process: asyncio.subprocess.Process, stdin: bytes | None) -> None:
    if stdin is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a tool may stop reading (and fail) early
        process.stdin.write(stdin)
        await process.stdin.drain()
    process.stdin.close()


async def _communicate(process: asyncio.subprocess.Process, stdin: str | None) -> tuple[_Captured, _Captured]:
    """stdout (the process killed past MAX_STDOUT) and the tail of stderr, once the process has ended."""
    assert process.stdout is not None and process.stderr is not None
    out, err, _ = await asyncio.gather(
        _read(process.stdout, MAX_STDOUT, process),
        _read(process.stderr, MAX_STDERR, None),
        _feed(process, stdin.encode() if stdin is not None else None),
    )
    await process.wait()
    return out, err


def _tail(stderr: _Captured) -> str:
    text = stderr.data.decode(errors="replace").strip()
    return f"(earlier output cut)\n{text}" if stderr.over else text


async def run(tool: str, *args: str, cwd: Path, stdin: str | None = None, env: Mapping[str, str] | None = None) -> Ran:
    """Run the tool in `cwd` with the scrubbed environment (`env` over it); ToolError (with the tail of its stderr and
    its exit code) when it fails, prints more than MAX_STDOUT bytes or takes longer than TIMEOUT."""
    program = find(tool)
    with tempfile.TemporaryDirectory(prefix="kapply-home-") as home:
        process = await asyncio.create_subprocess_exec(
            program,
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment(os.environ, home, env),
            process_group=0,  # its own group (killed whole), in the caller's session (the sandbox kills that)
            preexec_fn=confine.start(
                _CONFINEMENT.confinements if tool in OFFLINE else frozenset(), program, _CONFINEMENT.job
            ),
        )
        try:
            out, err = await asyncio.wait_for(_communicate(process, stdin), timeout=TIMEOUT)
        except TimeoutError:
            _kill(process)
            await process.wait()
            raise ToolError(f"{tool} did not finish in {TIMEOUT:.0f}s") from None
        except BaseException:  # cancelled (the controller stops): the tool must not outlive its reconcile
            _kill(process)
            await process.wait()
            raise
    if out.over:
        raise ToolError(f"{tool} printed more than {MAX_STDOUT} bytes: stopped", _tail(err))
    if process.returncode:
        broke = _broke_limit(process.returncode, (err.head + err.data).decode(errors="replace"))
        if broke:
            raise ToolError(f"{tool} {broke}", _tail(err), process.returncode)
        raise ToolError(f"{tool} failed (exit status {process.returncode})", _tail(err), process.returncode)
    return Ran(out.data.decode(errors="replace"), _tail(err))
