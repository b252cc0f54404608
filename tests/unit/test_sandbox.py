"""The sandbox (kapply.controller.sandbox): an App's fetch and template run in a forked child of a zygote, under hard
limits, and what comes back is checked. The template tool is a shell script named by $KAPPLY_YTT (tmp_path only);
the zygote is started per test, so it sees the test's environment."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kapply.controller import sandbox_app
from kapply.controller.confine import python_files
from kapply.controller.fetch import FetchPolicy
from kapply.controller.sandbox import (
    Protection,
    Sandbox,
    SandboxFailed,
    SandboxLimits,
    Stage,
    _answer,
    frame,
    read_frame,
    zygote_environment,
)
from kapply.errors import KapplyError
from kapply.http import Destinations
from kapply.objects import Obj


def app(inline: dict[str, str], template: list[Obj] | None = None, paths_from: list[Obj] | None = None) -> Obj:
    fetch: Obj = {"paths": inline, **({"pathsFrom": paths_from} if paths_from else {})}
    return {
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {
            "serviceAccountName": "sa",
            "fetch": [{"inline": fetch}],
            "template": template or [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }


async def nothing(kind: str, name: str) -> Obj | None:
    return None


def run_app(
    limits: SandboxLimits,
    the_app: Obj,
    read: Callable[[str, str], Awaitable[Obj | None]] = nothing,
    between: Callable[[Sandbox], Awaitable[None]] | None = None,
) -> tuple[str, str, frozenset[Protection]]:
    async def go() -> tuple[str, str, frozenset[Protection]]:
        sandbox = Sandbox(limits)
        protections = await sandbox.protections()
        if between is not None:
            await between(sandbox)
        lock, manifests = sandbox_app.result(
            await sandbox.run("app", sandbox_app.request(the_app, FetchPolicy()), read)
        )
        return lock, manifests, protections

    return asyncio.run(go())


@pytest.fixture
def ytt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def write(body: str) -> None:
        script = tmp_path / "ytt.sh"
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
        monkeypatch.setenv("KAPPLY_YTT", str(script))

    return write


LIMITS = SandboxLimits(memory=512 << 20, cpu=20, wall=30)


def test_an_app_is_fetched_and_templated_in_a_child_with_an_empty_home_and_no_controller_environment(
    ytt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "controller-secret")
    ytt('cat "$PWD"/*.yml; echo "---"; echo "home: $HOME"; echo "tmp: $TMPDIR"; env | grep -c -e KUBE -e AWS_ || true')
    lock, manifests, protections = run_app(LIMITS, app({"x.yml": "a: 1\n"}))
    assert "inline: {}" in lock and "path: ." in lock
    first, _, rest = manifests.partition("---\n")
    assert first == "a: 1\n"
    home, tmp, leaked = rest.splitlines()
    assert (
        home.startswith("home: ") and "kapply-sandbox-" in home and tmp.startswith("tmp: ") and "kapply-sandbox-" in tmp
    )
    assert leaked == "0"
    assert Protection.LIMITS in protections
    assert not Path(home.split(": ")[1]).parent.exists()  # the job's directory is removed after it


def test_the_childs_reads_are_served_by_the_parent_with_its_reader(ytt):
    ytt('cat "$PWD"/*.yml')
    asked: list[tuple[str, str]] = []

    async def read(kind: str, name: str) -> Obj | None:
        asked.append((kind, name))
        return {"data": {"from-cm.yml": "b: 2\n"}}

    _, manifests, _ = run_app(LIMITS, app({"x.yml": "a: 1\n"}, paths_from=[{"configMapRef": {"name": "cm"}}]), read)
    assert asked == [("ConfigMap", "cm")]
    assert "b: 2" in manifests


def test_a_read_the_parent_refuses_fails_the_fetch_with_its_message(ytt):
    ytt("cat")

    async def read(kind: str, name: str) -> Obj | None:
        raise KapplyError('secrets "s" is forbidden: User cannot get resource')

    with pytest.raises(SandboxFailed) as failed:
        run_app(LIMITS, app({"x.yml": "a: 1\n"}, paths_from=[{"secretRef": {"name": "s"}}]), read)
    assert failed.value.stage is Stage.FETCH and "is forbidden" in str(failed.value)


def test_a_tool_that_allocates_past_the_memory_limit_fails_naming_it(ytt):
    ytt("exec mawk 'BEGIN { s = \"x\"; while (1) s = s s }'")
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=256 << 20, cpu=20, wall=30), app({"x.yml": "a: 1\n"}))
    assert failed.value.stage is Stage.TEMPLATE
    assert str(failed.value) == (
        "Templating dir: ytt ran out of memory "
        "(the sandbox's limit is 268435456 bytes per process, --sandbox-memory-mib)"
    )
    assert "out of memory" in failed.value.stderr
    assert failed.value.lock.startswith("apiVersion: vendir.k14s.io/v1alpha1")  # the fetch went well


def test_a_go_tool_out_of_memory_is_named_so_though_a_dump_of_its_goroutines_follows(ytt):
    # Go says "fatal error: runtime: out of memory" first, then prints every goroutine's stack: far more than the
    # tail of stderr that the status keeps.
    ytt('echo "fatal error: runtime: out of memory" >&2; head -c 100000 /dev/zero | tr "\\0" "g" >&2; exit 2')
    with pytest.raises(SandboxFailed) as failed:
        run_app(LIMITS, app({"x.yml": "a: 1\n"}))
    assert str(failed.value) == (
        "Templating dir: ytt ran out of memory "
        f"(the sandbox's limit is {LIMITS.memory} bytes per process, --sandbox-memory-mib)"
    )
    assert failed.value.stderr.startswith("(earlier output cut)")


def test_a_tool_that_ran_into_the_memory_limit_is_named_so_whatever_it_says(ytt):
    # Under load Go's garbage collector can die of a failed allocation with a bare "SIGSEGV: segmentation violation":
    # the job's own account of the tool (its peak resident memory, from its rusage) names the limit.
    ytt(
        "exec /usr/bin/python3 -c '\n"
        'import os\nheld = []\ntry:\n    while True:\n        held.append(b"x" * (4 << 20))\n'
        "except MemoryError:\n    held.clear()\n"
        'os.write(2, b"SIGSEGV: segmentation violation\\n")\nos._exit(2)\''
    )
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=256 << 20, cpu=20, wall=30), app({"x.yml": "a: 1\n"}))
    assert str(failed.value) == (
        "Templating dir: ytt ran out of memory "
        "(the sandbox's limit is 268435456 bytes per process, --sandbox-memory-mib)"
    )
    assert failed.value.stderr == "SIGSEGV: segmentation violation"


def test_a_tool_that_fails_using_little_memory_is_not_said_to_have_run_out_of_it(ytt):
    ytt('head -c 1000000 /dev/zero | tr "\\0" "x" > /dev/null; echo "SIGSEGV: segmentation violation" >&2; exit 2')
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=256 << 20, cpu=20, wall=30), app({"x.yml": "a: 1\n"}))
    assert str(failed.value) == "Templating dir: ytt failed (exit status 2)"


@pytest.mark.parametrize(
    "said",
    [
        "sh: 1: Cannot fork",
        "bash: fork: retry: Resource temporarily unavailable",
        "runtime: failed to create new OS thread (have 12 already; errno=11)",
        "fatal: unable to fork",
    ],
)
def test_a_tool_that_could_not_start_a_process_is_said_to_have_reached_the_process_limit(ytt, said: str):
    # RLIMIT_NPROC does not bind root, which runs these tests: what tools say when it binds (the image's test shows
    # it binding, as the image's user) is named as the limit.
    ytt(f'echo "{said}" >&2; exit 2')
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=LIMITS.memory, cpu=20, wall=30, processes=100), app({"x.yml": "a: 1\n"}))
    assert str(failed.value) == (
        "Templating dir: ytt could not start a process: its user has the sandbox's 100 processes already"
    )


def test_a_tool_that_spins_past_the_cpu_limit_is_stopped_naming_it(ytt):
    ytt("while :; do :; done")
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=256 << 20, cpu=1, wall=60), app({"x.yml": "a: 1\n"}))
    assert str(failed.value) == "Templating dir: ytt used more than the sandbox's 1 s of CPU (--sandbox-cpu)"


def test_a_job_past_its_wall_time_is_killed_with_its_tools(ytt, tmp_path: Path):
    marker = tmp_path / "tool-survived"
    ytt(f"(sleep 3; touch {marker}) & sleep 60")
    with pytest.raises(SandboxFailed) as failed:
        run_app(SandboxLimits(memory=256 << 20, cpu=20, wall=1.5), app({"x.yml": "a: 1\n"}))
    assert failed.value.stage is Stage.TEMPLATE
    assert str(failed.value) == "Sandbox: fetching and templating took longer than 2s (--sandbox-timeout)"
    threading.Event().wait(4)  # the tool's own child would have written the marker by now
    assert not marker.exists()


def test_template_tools_have_no_network_where_the_kernel_allows_it(ytt):
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    ytt(
        f"/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" "
        "2>/dev/null && echo reached: yes || echo reached: no"
    )
    _, manifests, protections = run_app(LIMITS, app({"x.yml": "a: 1\n"}))
    with pytest.raises(BlockingIOError):  # no connection is waiting to be accepted
        server.accept()
    server.close()
    assert Protection.TOOL_NETWORK in protections  # this machine allows network namespaces (root, or user namespaces)
    assert manifests.strip() == "reached: no"


def test_a_zygote_that_died_is_started_again(ytt):
    ytt('cat "$PWD"/*.yml')

    async def kill_zygote(sandbox: Sandbox) -> None:
        zygote = sandbox._zygote
        assert zygote is not None
        zygote.process.send_signal(signal.SIGKILL)
        await zygote.process.wait()

    _, manifests, _ = run_app(LIMITS, app({"x.yml": "a: 1\n"}), between=kill_zygote)
    assert manifests == "a: 1\n"


def test_the_zygote_environment_keeps_only_tools_and_the_allow_list():
    env = zygote_environment(
        {
            "PATH": "/usr/bin",
            "KUBECONFIG": "/k",
            "KAPPLY_YTT": "/bin/ytt",
            "KAPPLY_FETCH_MAX_BYTES": "10",
            "AWS_SECRET_ACCESS_KEY": "x",
            "HOME": "/root",
        }
    )
    assert env == {"PATH": "/usr/bin", "KAPPLY_YTT": "/bin/ytt", "KAPPLY_FETCH_MAX_BYTES": "10", "HOME": "/nonexistent"}


def frames(*chunks: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return reader


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (frame({"x": "y" * 100}), "the sandbox sent a message of 108 bytes (at most 50)"),
        (frame({"x": 1})[:-2], "the sandbox sent a truncated message"),
        (b"\x00\x00", "the sandbox sent a truncated message"),
        (b"\x00\x00\x00\x03abc", "the sandbox sent a message that is not JSON"),
        (b"\x00\x00\x00\x02[]", "the sandbox sent a message that is not a JSON object"),
    ],
)
def test_what_the_child_sends_is_bounded_and_checked(data: bytes, message: str):
    async def read() -> dict[str, Any] | None:
        return await read_frame(frames(data), 50)

    with pytest.raises(KapplyError) as error:
        asyncio.run(read())
    assert str(error.value) == message


def test_a_frame_reads_back_and_the_end_is_none():
    async def read() -> list[dict[str, Any] | None]:
        reader = frames(frame({"a": [1]}))
        return [await read_frame(reader, 50), await read_frame(reader, 50)]

    assert asyncio.run(read()) == [{"a": [1]}, None]


@pytest.mark.parametrize(
    "asked",
    [
        {"kind": "ServiceAccount", "name": "default"},
        {"kind": "Secret", "name": ""},
        {"kind": "Secret", "name": "x" * 254},
        {"kind": "Secret", "name": 3},
        ["Secret", "s"],
    ],
)
def test_the_child_may_only_ask_for_a_secret_or_config_map_by_name(asked: object):
    called: list[object] = []

    async def read(kind: str, name: str) -> Obj | None:
        called.append((kind, name))
        return {}

    answer = asyncio.run(_answer(asked, read))
    assert answer == {"error": "the sandbox asked for something other than a Secret or ConfigMap"} and called == []


def test_a_result_without_its_fields_is_refused():
    with pytest.raises(SandboxFailed, match="without a lock and manifests"):
        sandbox_app.result({"lock": "x", "manifests": 3})
    assert sandbox_app.result(json.loads('{"lock": "l", "manifests": "m"}')) == ("l", "m")


def test_the_fetch_policy_goes_to_the_child_whole():
    policy = FetchPolicy(allow_file_urls=True, allow_plain_http_registries=True)
    assert sandbox_app.policy_from_json(json.loads(json.dumps(sandbox_app.policy_to_json(policy)))) == policy


def test_template_tools_see_only_the_systems_programs_themselves_and_their_jobs_files(ytt, tmp_path: Path):
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY")
    ytt(f'cat {canary} 2>/dev/null || echo "canary: unseen"; ls -d /*/* | tr "\\n" " "; echo; cat "$PWD"/*.yml')
    _, manifests, protections = run_app(LIMITS, app({"x.yml": "a: 1\n"}))
    assert Protection.TOOL_FILES in protections  # this machine allows mount namespaces (root, or user namespaces)
    unseen, top, content = manifests.splitlines()
    assert unseen == "canary: unseen" and "CANARY" not in manifests
    # Beyond the system's directories: the tool, Python's own files (the job's process runs in the same view) and the
    # job's directory, each under the directories that lead to it, and nothing beside them.
    seen = [Path(p) for p in top.split() if not p.startswith(("/usr/", "/dev/", "/tmp/", "/bin/", "/sbin/", "/lib"))]
    leading = [Path(p) for p in (*python_files(), os.environ["KAPPLY_YTT"], str(tmp_path))]
    assert all(any(p == q or p in q.parents or q in p.parents for q in leading) for p in seen), top
    assert content == "a: 1"


def test_the_policys_sequences_come_back_as_tuples():
    policy = FetchPolicy(destinations=Destinations(allow_local=False, refused=("10.0.0.1",)))
    assert sandbox_app.policy_from_json(json.loads(json.dumps(sandbox_app.policy_to_json(policy)))) == policy


def test_with_a_kbld_step_the_job_keeps_the_network_and_the_ca_certificates_not_the_machines_files(
    ytt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY")
    ytt(f'cat {canary} 2>/dev/null || echo "ytt: unseen"; ls /etc/ssl/certs >/dev/null 2>&1 || echo "ytt: no /etc"')
    kbld = tmp_path / "kbld.sh"
    # kbld reaches registries with the machine's CA certificates, and nothing else of the machine's
    kbld.write_text(f'#!/bin/sh\ncat\ncat {canary} 2>/dev/null || echo "kbld: unseen"\nls -d /etc/ssl/certs\n')
    kbld.chmod(0o755)
    monkeypatch.setenv("KAPPLY_KBLD", str(kbld))
    _, manifests, _ = run_app(LIMITS, app({"x.yml": "a: 1\n"}, template=[{"ytt": {}}, {"kbld": {"paths": ["-"]}}]))
    assert manifests.splitlines() == ["ytt: unseen", "kbld: unseen", "/etc/ssl/certs"]
