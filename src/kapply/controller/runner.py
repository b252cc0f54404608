"""The programs the controller runs to fetch and template (git, ytt, kustomize, helm, kbld, cue, sops): found through an
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
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO
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
# network namespace makes that structural), cue has no module registry and sops decrypts with the keys it is given
# (not a KMS or Vault a file names); git fetches, and kbld asks registries for the digests of tags.
OFFLINE = frozenset({"ytt", "helm", "kustomize", "cue", "sops"})


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


# A process whose peak resident memory reached this share of RLIMIT_DATA ran into the limit, whatever it then said:
# the limit counts the heap it has mapped, which it has mostly touched (Go's runtime dies with ~75 % resident, on a
# "fatal error: runtime: ..." or, in its garbage collector, a bare SIGSEGV).
_NEAR_MEMORY = 0.5


def _broke_limit(returncode: int, stderr: str, peak: int) -> str:
    """What a failed tool's exit says of the process's limits, from the job's own accounting (`peak`: the tool's peak
    resident memory in bytes, from its rusage) then the tool's words: "" when nothing (a limit not set says
    nothing)."""
    if resource.getrlimit(resource.RLIMIT_NPROC)[0] != resource.RLIM_INFINITY and _NO_PROCESS.search(stderr):
        return processes_message()
    memory = resource.getrlimit(resource.RLIMIT_DATA)[0]
    if memory != resource.RLIM_INFINITY and (
        peak >= memory * _NEAR_MEMORY
        or "out of memory" in stderr.lower()
        or "cannot allocate memory" in stderr.lower()
        or "MemoryError" in stderr
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


def _kill(pid: int) -> None:
    """Kill the tool and whatever it started (git's remote helpers, ssh): they share its process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class _Captured:
    data: bytes
    over: bool  # the stream went past its limit
    head: bytes = b""  # its first _HEAD bytes: where Go says it ran out of memory, before a dump of every goroutine


@dataclass(frozen=True, slots=True)
class _Exit:
    code: int  # as Popen.returncode: -N for signal N
    peak: int  # bytes: the process's peak resident memory (its descendants' included), from its rusage


async def _read(stream: asyncio.StreamReader, limit: int, pid: int | None) -> _Captured:
    """What `stream` carries. Past `limit` bytes: with `pid`, the process is killed (its output is refused whole);
    without, only the last `limit` bytes are kept (a tail)."""
    kept = bytearray()
    head = b""
    over = False
    while chunk := await stream.read(_CHUNK):
        kept += chunk
        if len(head) < _HEAD:
            head += chunk[: _HEAD - len(head)]
        if len(kept) > limit:
            over = True
            if pid is not None:
                _kill(pid)
                return _Captured(b"", over)
            del kept[: len(kept) - limit]
    return _Captured(bytes(kept), over, head)


def _feed(pipe: IO[bytes], stdin: bytes) -> None:
    """Write `stdin` to the tool and close it (in a thread: a pipe's write blocks until the tool reads)."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a tool may stop reading (and fail) early
        try:
            pipe.write(stdin)
        finally:
            pipe.close()


async def _reader(pipe: IO[bytes], transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    """A stream of `pipe`, its transport added to `transports` (the caller closes them)."""
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe
    )
    transports.append(transport)
    return reader


async def _exited(process: subprocess.Popen[bytes]) -> _Exit:
    """Wait for the tool to end, then reap it with wait4, which gives its rusage (asyncio's child watchers reap
    without it): the job's own account of what the tool used."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    fd = os.pidfd_open(process.pid)
    try:
        loop.add_reader(fd, readable)
        try:
            await ended
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait for it again
    return _Exit(process.returncode, usage.ru_maxrss << 10)  # ru_maxrss is in KiB on Linux


async def _communicate(process: subprocess.Popen[bytes], stdin: str | None) -> tuple[_Captured, _Captured, _Exit]:
    """stdout (the process killed past MAX_STDOUT), the tail of stderr and the exit, once the process has ended; the
    process killed (and reaped) if this is cancelled."""
    assert process.stdout is not None and process.stderr is not None
    feeding = None
    if stdin is not None and process.stdin is not None:
        feeding = asyncio.ensure_future(asyncio.to_thread(_feed, process.stdin, stdin.encode()))
    transports: list[asyncio.BaseTransport] = []
    try:
        out, err = (await _reader(process.stdout, transports)), (await _reader(process.stderr, transports))
        captured = await asyncio.gather(_read(out, MAX_STDOUT, process.pid), _read(err, MAX_STDERR, None))
        return (*captured, await _exited(process))
    except BaseException:  # cancelled (at TIMEOUT, or the controller stops): the tool must not outlive its run
        _kill(process.pid)
        if process.returncode is None:
            await _exited(process)
        raise
    finally:
        for transport in transports:
            transport.close()
        if feeding is not None:
            await feeding  # ends once the tool has read it all or is gone


def _tail(stderr: _Captured) -> str:
    text = stderr.data.decode(errors="replace").strip()
    return f"(earlier output cut)\n{text}" if stderr.over else text


async def run(tool: str, *args: str, cwd: Path, stdin: str | None = None, env: Mapping[str, str] | None = None) -> Ran:
    """Run the tool in `cwd` with the scrubbed environment (`env` over it); ToolError (with the tail of its stderr and
    its exit code) when it fails, prints more than MAX_STDOUT bytes or takes longer than TIMEOUT."""
    program = find(tool)
    with tempfile.TemporaryDirectory(prefix="kapply-home-") as home:
        process = subprocess.Popen(  # not asyncio's: its child watchers reap without the rusage _exited reads
            [program, *args],
            cwd=cwd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(os.environ, home, env),
            process_group=0,  # its own group (killed whole), in the caller's session (the sandbox kills that)
            preexec_fn=confine.start(
                _CONFINEMENT.confinements if tool in OFFLINE else frozenset(), program, _CONFINEMENT.job
            ),
        )
        try:
            out, err, ended = await asyncio.wait_for(_communicate(process, stdin), timeout=TIMEOUT)
        except TimeoutError:
            raise ToolError(f"{tool} did not finish in {TIMEOUT:.0f}s") from None
    if out.over:
        raise ToolError(f"{tool} printed more than {MAX_STDOUT} bytes: stopped", _tail(err))
    if ended.code:
        broke = _broke_limit(ended.code, (err.head + err.data).decode(errors="replace"), ended.peak)
        if broke:
            raise ToolError(f"{tool} {broke}", _tail(err), ended.code)
        raise ToolError(f"{tool} failed (exit status {ended.code})", _tail(err), ended.code)
    return Ran(out.data.decode(errors="replace"), _tail(err))
