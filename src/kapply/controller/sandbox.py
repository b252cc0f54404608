"""The sandbox: everything an App's or a repository's author controls is fetched, unpacked and templated in a child
process under hard limits, never in the controller's process or its event loop.

The controller holds far more rights than any tenant (a token for any service account, its kubeconfig on its disk),
so a bug in a fetcher, an unpacker or a template tool must not become the controller's bug: checks written around
each tool and format keep missing cases (a second YAML document, a header type), and a bomb that only allocates
takes the controller down for every tenant. So the whole fetch and template stage of a sync runs in a child:

- **A zygote.** One child process per controller (`python -I -m kapply.controller.sandbox`), started on first use
  with an allow-listed environment (runner.environment: no kubeconfig, no credentials, no proxy passwords) and the
  fetch and template modules already imported. It holds nothing of the controller's: no token, no client, no
  memory of other tenants. For each job it forks (a few milliseconds, where starting Python and importing the
  fetchers costs ~0.4 s of CPU: a sync of an inline App stays cheap), and the forked child:
- **sets its limits before it reads anything of the job**: RLIMIT_DATA (memory: every process of the job, tools
  included, gets at most `memory` bytes of heap; Go tools and Python alike fail on it, where RLIMIT_AS would stop a
  Go program from starting), RLIMIT_CPU (`cpu` seconds of CPU per process), RLIMIT_FSIZE (no file larger than the
  fetch byte limit), RLIMIT_NOFILE, no core files; a new session (the controller kills it whole); SIGKILL when the
  zygote dies (the controller stopped); HOME and TMPDIR in the job's own empty directories;
- runs the job: fetch, then template (the App job is kapply.controller.sandbox_app, a repository's
  kapply.packaging.sandbox_repository); where the kernel allows it (confine.py), the fetchers see only the system's
  programs, the tools, the job's directory and what they need of /etc (names, CA certificates), and template tools
  that need no network (ytt, helm, kustomize) run in a network namespace of their own without /etc;
- asks the controller for the Secrets and ConfigMaps the job reads (the parent reads them with the App's own
  account, as before), and sends back one result.
- **The parent treats the child as untrusted too**: every message is a length-prefixed JSON frame, bounded in size
  (a read request 4 KiB, the result runner.MAX_STDOUT plus 1 MiB); a read may only name a Secret or ConfigMap by an
  object name; the whole job has `wall` seconds, after which its process group is killed. A child that dies, hangs
  or sends anything else ends its job with a FetchError or TemplateError naming the limit when one was reached,
  never with an exception in the controller.

What holds where (docs/reconciler.md, "The sandbox"): the rlimits hold everywhere (a pod under the runtime's default
seccomp profile included); the template tools' namespaces need root or unprivileged user namespaces: `protections()`
says which are active, and the controller logs it and exports it as a metric.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import logging
import os
import resource
import shutil
import signal
import socket
import struct
import sys
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kapply.controller import confine, runner
from kapply.controller.fetch import MAX_BYTES, ReadSource
from kapply.controller.settings import Settings
from kapply.errors import KapplyError
from kapply.objects import Obj

_log = logging.getLogger("kapply.controller")

MEMORY = 1 << 30  # bytes of heap (RLIMIT_DATA) for each process of a job
CPU = 120  # seconds of CPU for each process of a job
WALL = 300.0  # seconds for a whole job, fetch and template together
OPEN_FILES = 1024
# processes (threads included) of the user the controller runs as, which a job may not pass (RLIMIT_NPROC: the
# kernel counts them per user, and does not bind root)
PROCESSES = 512
_REAP_INTERVAL = 1.0  # seconds: the zygote waits for the jobs that ended at least this often
_CPU_GRACE = 5  # seconds between SIGXCPU (the soft limit) and SIGKILL (the hard one)
_REQUEST_MAX = 4 << 10  # bytes: a read request of the child's, the job's start
_RESULT_MAX = runner.MAX_STDOUT + (1 << 20)  # bytes: the template output and the lock, as JSON
_JOB_MAX = 64 << 20  # bytes: what the parent sends (a spec's inline files, a Secret read back)
_HEADER = struct.Struct(">I")

# The modules that run each kind of job in the child (`run(request, read) -> result`), imported by name so that the
# controller's layer does not import the packaging layer above it; the zygote imports both before its first fork.
JOBS = {"app": "kapply.controller.sandbox_app", "repository": "kapply.packaging.sandbox_repository"}


class Stage(StrEnum):
    FETCH = "fetch"
    TEMPLATE = "template"


class Protection(StrEnum):
    """What confines a job beyond its own process (exported per protection as kapply_sandbox_protection)."""

    LIMITS = "limits"  # rlimits of memory, CPU, file size and open files: always
    TOOL_NETWORK = "tool-network"  # template tools without network (a network namespace of their own)
    TOOL_FILES = "tool-files"  # template tools see the system's programs, themselves and their job's files only
    # fetchers see what tools do and what they need of /etc (unless the controller allows file:// URLs)
    FETCH_FILES = "fetch-files"


_PROTECTION = {
    confine.Confinement.NETWORK: (Protection.TOOL_NETWORK,),
    confine.Confinement.FILES: (Protection.TOOL_FILES, Protection.FETCH_FILES),
}


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """The hard limits of every job; the controller's --sandbox-* flags set them."""

    memory: int = MEMORY
    cpu: int = CPU
    wall: float = WALL
    file_size: int = MAX_BYTES
    open_files: int = OPEN_FILES
    processes: int = PROCESSES


class SandboxFailed(KapplyError):
    """The job failed in `stage`; `lock` is the fetch stage's lock when the fetch went well."""

    def __init__(self, stage: Stage, message: str, stderr: str = "", exit_code: int = -1, lock: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.stderr = stderr
        self.exit_code = exit_code
        self.lock = lock


# --- frames -----------------------------------------------------------------------------------------------------------


def frame(message: Mapping[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(data)) + data


async def read_frame(reader: asyncio.StreamReader, limit: int) -> dict[str, Any] | None:
    """The next frame, or None at the end of the stream; KapplyError for a frame over `limit` bytes or not a JSON
    object (the other side is not trusted)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise KapplyError("the sandbox sent a truncated message") from None
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise KapplyError(f"the sandbox sent a message of {size} bytes (at most {limit})")
    try:
        message = json.loads(await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        raise KapplyError("the sandbox sent a truncated message") from None
    except ValueError:
        raise KapplyError("the sandbox sent a message that is not JSON") from None
    if not isinstance(message, dict):
        raise KapplyError("the sandbox sent a message that is not a JSON object")
    return message


def _text(message: Mapping[str, Any], key: str) -> str:
    value = message.get(key, "")
    if not isinstance(value, str):
        raise KapplyError(f"the sandbox sent a {key} that is not a string")
    return value


# --- the parent -------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Zygote:
    process: asyncio.subprocess.Process
    control: socket.socket
    protections: frozenset[Protection]


@dataclass(slots=True)
class Sandbox:
    """The controller's side: starts the zygote on first use (again if it died) and runs jobs in its children."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    _zygote: _Zygote | None = None
    _starting: asyncio.Lock | None = None

    async def protections(self) -> frozenset[Protection]:
        return (await self._started()).protections

    async def run(
        self,
        job: str,
        request: Obj,
        read: ReadSource,
        on_fetched: Callable[[str], Awaitable[None]] | None = None,
    ) -> Obj:
        """Run `job` (a key of JOBS) on `request` in a child; its result. `read` serves the child's reads;
        `on_fetched` is told the fetch stage's lock when the child reports the fetch done. SandboxFailed when the job
        failed or the child broke a limit or the protocol."""
        zygote = await self._started()
        work = Path(tempfile.mkdtemp(prefix="kapply-sandbox-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        state = _JobState()
        try:
            start = {"limits": asdict(self.limits), "work": str(work)}
            try:
                socket.send_fds(zygote.control, [json.dumps(start).encode()], [theirs.fileno()])
            except OSError:
                self._zygote = None  # it died: the next job starts another
                raise SandboxFailed(
                    Stage.FETCH, "Sandbox: the sandbox process is not running (it is restarted)"
                ) from None
            finally:
                theirs.close()
            reader, writer = await asyncio.open_unix_connection(sock=ours)
            try:
                writer.write(frame({"job": job, "request": request}))
                done = await asyncio.wait_for(self._serve(reader, writer, read, state, on_fetched), self.limits.wall)
                state.pid = 0  # the job ended on its own: nothing of it is left to kill
                return done
            except TimeoutError:
                raise SandboxFailed(
                    state.stage,
                    f"Sandbox: fetching and templating took longer than {self.limits.wall:.0f}s (--sandbox-timeout)",
                    lock=state.lock,
                ) from None
            finally:
                state.kill()
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        finally:
            ours.close()
            await asyncio.to_thread(shutil.rmtree, work, True)

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        read: ReadSource,
        state: _JobState,
        on_fetched: Callable[[str], Awaitable[None]] | None,
    ) -> Obj:
        while True:
            try:
                message = await read_frame(reader, _RESULT_MAX if state.pid else _REQUEST_MAX)
            except KapplyError as e:
                raise SandboxFailed(state.stage, f"Sandbox: {e}", lock=state.lock) from None
            if message is None:
                raise SandboxFailed(
                    state.stage,
                    "Sandbox: the fetch and template process ended without a result (it was killed: it "
                    f"{runner.memory_message(self.limits.memory)}, or {runner.cpu_message(self.limits.cpu)}, "
                    "or it crashed)",
                    lock=state.lock,
                )
            if not state.pid:  # the first frame, sent before the child read anything of the job
                pid = message.get("pid")
                if not isinstance(pid, int) or pid <= 1:
                    raise SandboxFailed(state.stage, "Sandbox: the sandbox process did not start")
                state.pid = pid
            elif "read" in message:
                writer.write(frame(await _answer(message["read"], read)))
            elif "fetched" in message:
                state.lock, state.stage = _text(message, "fetched"), Stage.TEMPLATE
                if on_fetched is not None:
                    await on_fetched(state.lock)
            elif "failed" in message:
                raise _failure(message["failed"], state)
            elif "result" in message and isinstance(message["result"], dict):
                return message["result"]
            else:
                raise SandboxFailed(state.stage, "Sandbox: the sandbox sent an unexpected message", lock=state.lock)

    async def _started(self) -> _Zygote:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            zygote = self._zygote
            if zygote is not None and zygote.process.returncode is None:
                return zygote
            if zygote is not None:
                _log.warning("the sandbox process ended (status %s): starting another", zygote.process.returncode)
                zygote.control.close()
            self._zygote = zygote = await _start_zygote()
            _SEEN.update({p: p in zygote.protections for p in Protection})
            _log.info(
                "sandbox started: %s",
                ", ".join(f"{p.value}: {'on' if p in zygote.protections else 'off'}" for p in Protection),
            )
            return zygote


@dataclass(slots=True)
class _JobState:
    pid: int = 0
    stage: Stage = Stage.FETCH
    lock: str = ""

    def kill(self) -> None:
        """The job's process and every process of its session (the child called setsid, so the session's id is its
        pid; the tools it runs have process groups of their own in that session)."""
        if self.pid:
            for pid in [self.pid, *session_members(self.pid)]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


def session_members(session: int) -> list[int]:
    """The processes whose session id is `session` (from /proc: field 6 of /proc/PID/stat)."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after the command's name, which may hold spaces
        if len(fields) > 3 and int(fields[3]) == session:
            members.append(int(entry.name))
    return members


_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[SandboxLimits, Sandbox]] = (
    weakref.WeakKeyDictionary()
)


_SEEN: dict[Protection, bool] = {}


def protections_seen() -> Mapping[Protection, bool]:
    """Which protections the last sandbox started in this process has (empty before the first: the metrics')."""
    return dict(_SEEN)


def shared(settings: Settings) -> Sandbox:
    """The running event loop's sandbox with the limits of the controller's `settings`: one zygote serves the App
    and the packaging controllers."""
    limits = SandboxLimits(memory=settings.sandbox_memory, cpu=settings.sandbox_cpu, wall=settings.sandbox_timeout)
    by_limits = _SHARED.setdefault(asyncio.get_running_loop(), {})
    sandbox = by_limits.get(limits)
    if sandbox is None:
        sandbox = by_limits[limits] = Sandbox(limits)
    return sandbox


async def _answer(asked: object, read: ReadSource) -> Obj:
    """A read the child asked for: only a Secret or ConfigMap of the job's namespace (the `read` given), by a name
    that is a string of object-name length."""
    if not (
        isinstance(asked, dict)
        and asked.get("kind") in ("Secret", "ConfigMap")
        and isinstance(asked.get("name"), str)
        and 0 < len(asked["name"]) <= 253
    ):
        return {"error": "the sandbox asked for something other than a Secret or ConfigMap"}
    try:
        return {"object": await read(asked["kind"], asked["name"])}
    except KapplyError as e:
        return {"error": str(e)}


def _failure(failed: object, state: _JobState) -> SandboxFailed:
    if not isinstance(failed, dict):
        return SandboxFailed(state.stage, "Sandbox: the sandbox sent an unexpected failure", lock=state.lock)
    stage = Stage.TEMPLATE if failed.get("stage") == Stage.TEMPLATE.value else Stage.FETCH
    exit_code = failed.get("exitCode", -1)
    return SandboxFailed(
        stage,
        _text(failed, "message") or "Sandbox: failed",
        _text(failed, "stderr"),
        exit_code if isinstance(exit_code, int) else -1,
        state.lock,
    )


def zygote_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The zygote's environment: what a tool may inherit (runner.environment), and the variables that name the tools
    and the fetch limits. HOME is set per job."""
    env = runner.environment(environ, "/nonexistent")
    env |= {k: v for k, v in environ.items() if k.startswith("KAPPLY_") and not k.startswith("KAPPLY_SANDBOX")}
    env.pop("KUBECONFIG", None)
    return env


async def _start_zygote() -> _Zygote:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with tempfile.TemporaryDirectory(prefix="kapply-sandbox-home-") as home:
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-m",
                "kapply.controller.sandbox",
                stdin=theirs.fileno(),
                stdout=asyncio.subprocess.DEVNULL,
                env=zygote_environment(os.environ) | {"HOME": home},
                cwd="/",
                start_new_session=True,
            )
        finally:
            theirs.close()
        ours.setblocking(False)
        try:
            hello = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(ours, _REQUEST_MAX), 120)
            protections = frozenset(Protection(p) for p in json.loads(hello)["protections"])
        except (TimeoutError, ValueError, KeyError, TypeError):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            ours.close()
            raise SandboxFailed(Stage.FETCH, "Sandbox: the sandbox process did not start") from None
    ours.setblocking(True)
    return _Zygote(process, ours, protections)


# --- the zygote and its children --------------------------------------------------------------------------------------


def _apply_limits(limits: SandboxLimits) -> None:
    for which, value in (
        (resource.RLIMIT_DATA, limits.memory),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu, limits.cpu + _CPU_GRACE))


class _CpuLimit(BaseException):
    """SIGXCPU: the job's process reached its CPU limit (a BaseException: no `except Exception` swallows it)."""


def _on_cpu_limit(signum: int, frame: object) -> None:
    raise _CpuLimit


def _child(job_fd: int, start: Mapping[str, Any], confinements: frozenset[confine.Confinement]) -> None:
    """A job's process, just forked from the zygote: limits first, then the job; never returns."""
    try:
        os.setsid()
        confine.die_with_parent()
        limits = SandboxLimits(**start["limits"])
        _apply_limits(limits)
        signal.signal(signal.SIGXCPU, _on_cpu_limit)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails (EFBIG) instead of killing
        work = Path(start["work"])
        for name in ("home", "tmp", "root"):
            (work / name).mkdir()
        os.environ["HOME"] = str(work / "home")
        os.environ["TMPDIR"] = tempfile.tempdir = str(work / "tmp")
        os.chdir(work)
        (work / confine.VIEW).mkdir()
        runner.configure(confinements, str(work))
        connection = socket.socket(fileno=job_fd)
        connection.setblocking(True)
        connection.sendall(frame({"pid": os.getpid()}))
        asyncio.run(_job(connection, work / "root"))
    except BaseException:  # noqa: BLE001 (the job's process ends here whatever happened; the parent says why)
        pass
    os._exit(0)


async def _job(connection: socket.socket, root: Path) -> None:
    reader, writer = await asyncio.open_unix_connection(sock=connection)
    asked = await read_frame(reader, _JOB_MAX)
    if asked is None or asked.get("job") not in JOBS:
        return
    pending: asyncio.Lock = asyncio.Lock()

    async def read(kind: str, name: str) -> Obj | None:
        async with pending:  # one read at a time: the answers come back in order
            writer.write(frame({"read": {"kind": kind, "name": name}}))
            answer = await read_frame(reader, _JOB_MAX)
        if answer is None:
            raise KapplyError("the controller closed the sandbox's connection")
        if "error" in answer:
            raise KapplyError(str(answer["error"]))
        found = answer.get("object")
        return found if isinstance(found, dict) else None

    run = importlib.import_module(JOBS[asked["job"]]).run
    stage = Stage.FETCH

    async def on_fetched(lock: str) -> None:
        nonlocal stage
        stage = Stage.TEMPLATE
        writer.write(frame({"fetched": lock}))
        await writer.drain()

    try:
        result = await run(asked.get("request") or {}, root, read, on_fetched)
        message: dict[str, Any] = {"result": result}
    except SandboxFailed as e:
        message = {"failed": {"stage": e.stage.value, "message": str(e), "stderr": e.stderr, "exitCode": e.exit_code}}
    except _CpuLimit:
        message = {
            "failed": {
                "stage": stage.value,
                "message": f"Sandbox: the fetch and template process {runner.cpu_message()}",
            }
        }
    except MemoryError:
        message = {
            "failed": {
                "stage": stage.value,
                "message": f"Sandbox: the fetch and template process {runner.memory_message()}",
            }
        }
    except Exception as e:  # noqa: BLE001 (any other failure is the job's, said in its status)
        message = {"failed": {"stage": stage.value, "message": unexpected(e)}}
    writer.write(frame(message))
    await writer.drain()


def unexpected(error: BaseException) -> str:
    """The message of an exception no check foresaw (a corrupt input some library did not expect, an OSError)."""
    if isinstance(error, OSError) and error.errno == 27:  # EFBIG: RLIMIT_FSIZE
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        return f"Sandbox: a file larger than {limit} bytes was written (KAPPLY_FETCH_MAX_BYTES)"
    return f"Sandbox: {type(error).__name__}: {error}"


def zygote(control: socket.socket) -> None:
    """The zygote's loop: a job's start (its limits, and the socket of its own) per message; a fork per job."""
    for module in JOBS.values():
        importlib.import_module(module)
    confinements = frozenset(c for c in confine.Confinement if confine.probe(c))
    protections = {Protection.LIMITS, *(p for c in confinements for p in _PROTECTION[c])}
    confine.die_with_parent()
    gc.collect()
    gc.freeze()  # what the zygote holds is never collected in a job: its pages stay shared instead of copied
    control.sendall(json.dumps({"protections": sorted(protections)}).encode())
    control.settimeout(_REAP_INTERVAL)
    while True:
        _reap()
        try:
            message, fds, _, _ = socket.recv_fds(control, _REQUEST_MAX, 1)
        except TimeoutError:
            continue
        except OSError:
            return
        if not message:
            return  # the controller is gone
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            control.close()
            _child(fds[0], json.loads(message), confinements)
        os.close(fds[0])


def _reap() -> None:
    """Wait for the jobs that ended, so that their CPU time (their tools' included) counts as the zygote's children's
    (/proc/PID/stat's cutime and cstime: what the controller bench reads)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


if __name__ == "__main__":  # run as `-m`: the zygote runs the module's imported copy, whose classes the jobs raise
    importlib.import_module("kapply.controller.sandbox").zygote(socket.socket(fileno=0))
