"""What confines a tool's process beyond its limits, between fork and exec: the kernel's namespaces, through libc.

A template tool that needs no network (ytt, helm template, kustomize) gets a network namespace of its own (a loopback
device that is down, nothing else) and a view of the machine's files reduced to the system's programs and libraries
(`/usr` and its kin, read-only), the tool itself (read-only) and its job's directory (the fetched files, the steps'
scratch directories, HOME and TMPDIR): the controller's kubeconfig and token, other tenants' jobs and the rest of the
machine are not there to be read, whatever path a tool is talked into opening. As root the namespaces are made
directly; otherwise inside a new user namespace, where the kernel allows unprivileged ones. `probe` tells which the
kernel allows (the sandbox's zygote asks once).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_PR_SET_PDEATHSIG = 1
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")  # programs and libraries, read-only
# What a fetcher needs of /etc, read-only, in its view: names (the resolver's files), its own user (ssh asks for it)
# and the CA certificates. Taken away again before the template stage.
NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
)
DEVICES = ("null", "zero", "random", "urandom")
VIEW = ".view"  # in a job's directory: the mount point of a tool's root


class Confinement(StrEnum):
    NETWORK = "network"  # a network namespace of its own
    FILES = "files"  # a view of the files limited to the system's programs, the tool and the job's directory


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _checked(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


@dataclass(slots=True)
class _Namespaces:
    own_user: bool = False  # this process made a user namespace of its own (and inherits it into its children)


_NAMESPACES = _Namespaces()


def unshare(confinements: frozenset[Confinement]) -> None:
    """Move the calling process into new namespaces for `confinements`: in a new user namespace unless root or
    already in one of its own (where it has the rights to make the others; the kernel refuses a second user namespace
    to a process in a chroot, such as a view)."""
    flags = (_CLONE_NEWNET if Confinement.NETWORK in confinements else 0) | (
        _CLONE_NEWNS if Confinement.FILES in confinements else 0
    )
    if flags and os.geteuid() != 0 and not _NAMESPACES.own_user:
        flags |= _CLONE_NEWUSER
    if flags:
        _checked(_libc().unshare(flags), "unshare")
        _NAMESPACES.own_user = _NAMESPACES.own_user or bool(flags & _CLONE_NEWUSER)


def die_with_parent() -> None:
    """SIGKILL when the parent process ends (a job's process when the zygote goes, a tool when its job's goes)."""
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encoded = [None if v is None else v.encode() for v in (source, target, fstype)]
    _checked(_libc().mount(*encoded, flags, None if data is None else data.encode()), f"mount {target}")


def _bind(path: str, root: str, *, writable: bool = False, recursive: bool = True) -> None:
    target = root + path
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass
    _mount(path, target, None, _MS_BIND | (_MS_REC if recursive else 0))
    if not writable:
        _mount(None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_REC)


def enter_view(programs: Iterable[str], job: str, cwd: str, same_place: Iterable[str] = ()) -> None:
    """Make the calling process (in a mount namespace of its own) see only SYSTEM (read-only), `programs` (files or
    directories, read-only), `same_place` (read-only, where they are even if they are symbolic links elsewhere) and
    `job` (its job's directory), then work in `cwd` within it."""
    root = os.path.join(job, VIEW)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing of what follows reaches the machine's mounts
    _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    for top in SYSTEM:
        if os.path.islink(top):  # merged /usr: /bin -> usr/bin
            os.symlink(os.readlink(top), root + top)
        elif os.path.isdir(top):
            _bind(top, root)
    for program in sorted({os.path.realpath(p) for p in programs}):
        if os.path.exists(program) and not any(program.startswith(f"{top}/") for top in SYSTEM):
            _bind(program, root)
    bound: list[str] = []
    for path in same_place:
        if os.path.exists(path) and not any(path.startswith(f"{other}/") for other in bound):
            _bind(path, root)
            bound.append(path)
    _bind(job, root, writable=True, recursive=False)  # not the view's own mount, which lies within
    for device in DEVICES:
        _bind(f"/dev/{device}", root, writable=True)
    os.makedirs(f"{root}/tmp", exist_ok=True)
    os.chroot(root)
    os.chdir(cwd)


def python_files() -> list[str]:
    """What this Python process may still import from: its prefixes and every directory on its path."""
    return [p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path} if p and os.path.isdir(p)]


def enter_job_view(confinements: frozenset[Confinement], programs: Iterable[str], job: str) -> None:
    """Confine the calling process (a job's, once it has fetched: only its tools run after) and so every tool it then
    starts, at the cost of one set of namespaces and mounts per job instead of one per tool (whose start then needs no
    code between fork and exec). Python's own files stay readable, the programs' too."""
    unshare(confinements)
    if Confinement.FILES in confinements:
        enter_view([*programs, *python_files()], job, os.getcwd())


def enter_fetch_view(programs: Iterable[str], job: str) -> None:
    """Confine the calling process (a job's, before its fetch) to a view of the files that is its template stage's
    (`enter_job_view`) plus what a fetcher needs of /etc (NETWORK_FILES, and the CA certificates SSL_CERT_FILE and
    SSL_CERT_DIR name): git, ssh and the http and registry clients keep the network, not the machine's files."""
    unshare(frozenset({Confinement.FILES}))
    certificates = [os.environ[name] for name in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(name)]
    enter_view([*programs, *python_files()], job, os.getcwd(), [*NETWORK_FILES, *certificates])


def leave_network(confinements: frozenset[Confinement]) -> None:
    """After the fetch (in the fetch view): the files of NETWORK_FILES go, and the network too where `confinements`
    allow it, for the process and every tool it starts."""
    for path in NETWORK_FILES:
        if os.path.lexists(path):
            _checked(_libc().umount2(path.encode(), _MNT_DETACH), f"umount {path}")
            (os.rmdir if os.path.isdir(path) else os.remove)(path)  # the mount point, made by enter_view
    with contextlib.suppress(OSError):  # SSL_CERT_FILE may have been bound within /etc
        os.rmdir("/etc")
    unshare(confinements & {Confinement.NETWORK})


def start(confinements: frozenset[Confinement], program: str, job: str | None) -> Callable[[], None] | None:
    """What a tool's process runs between fork and exec: it dies with its parent, then enters `confinements`; None
    when there is nothing to enter (the tool then starts by vfork, a few milliseconds sooner)."""
    if not confinements:
        return None

    def confine() -> None:
        die_with_parent()
        unshare(confinements)
        if Confinement.FILES in confinements and job is not None:
            enter_view([program], job, os.getcwd())

    return confine


def probe(confinement: Confinement) -> bool:
    """Whether the kernel lets this process make `confinement` (tried in a child process)."""
    pid = os.fork()
    if pid == 0:
        try:
            unshare(frozenset({confinement}))
            if confinement is Confinement.FILES:
                _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
                _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m")  # only this process sees it
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
