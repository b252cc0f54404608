"""git's options that kapply used to ignore: refSelection (the highest tag within semver constraints, as vendir
picks it; a constraint is never an option), depth (a shallow clone of every branch and tag), lfsSkipSmudge and
forceHTTPBasicAuth (the credentials in a header given through the environment, never a command line). Repositories
are local ones under tmp_path."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path

import pytest

from kapply.controller.fetch import FetchError, FetchPolicy, Limits, Transport, _git_env, fetch
from kapply.controller.spec import FetchSource, Git, TagSelection
from kapply.objects import Obj

ALLOW = FetchPolicy(allow_file_urls=True, limits=Limits())


async def nothing(kind: str, name: str) -> Obj | None:
    return None


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> str:
    """A repository with tagged versions (one a prerelease, one no version), then two commits tagged with none."""
    path = tmp_path / "repo"
    path.mkdir()
    git("init", "-q", "--initial-branch=main", cwd=path)
    for tag in ("v1.0.0", "v1.2.0", "2.0.0-rc.1", "not-a-version", "v1.10.0"):
        (path / "v.yml").write_text(f"v: {tag}\n")
        git("add", "-A", cwd=path)
        git("commit", "-q", "-m", tag, cwd=path)
        git("tag", tag, cwd=path)
    for untagged in ("between", "tip"):
        (path / "v.yml").write_text(f"v: {untagged}\n")
        git("commit", "-q", "-am", untagged, cwd=path)
    return f"file://{path}"


def fetched(root: Path, source: Git) -> str:
    asyncio.run(fetch((FetchSource("", git=source),), root, nothing, ALLOW))
    return (root / "v.yml").read_text()


@pytest.mark.parametrize(
    ("selection", "version"),
    [
        (TagSelection(), "v1.10.0"),
        (TagSelection("<1.10.0"), "v1.2.0"),
        (TagSelection(">=1.0.0", ()), "2.0.0-rc.1"),
        (TagSelection("1.0.x"), "v1.0.0"),
    ],
)
def test_ref_selection_takes_the_highest_version_within_the_constraints(
    tmp_path: Path, repo: str, selection: TagSelection, version: str
):
    assert fetched(tmp_path / "out", Git(repo, ref_selection=selection)) == f"v: {version}\n"


@pytest.mark.parametrize("constraints", [">3.0.0", "--upload-pack=touch /tmp/x", "$(touch x)"])
def test_a_selection_that_matches_nothing_fails_as_vendir_says(tmp_path: Path, repo: str, constraints: str):
    with pytest.raises(FetchError, match="Determining tag selection: "):
        fetched(tmp_path / "out", Git(repo, ref_selection=TagSelection(constraints)))
    assert not (tmp_path / "x").exists() and not Path("/tmp/x").exists()


def test_depth_clones_every_branch_and_tag_shallow(tmp_path: Path, repo: str):
    assert fetched(tmp_path / "a", Git(repo, "main", depth=1)) == "v: tip\n"
    assert fetched(tmp_path / "b", Git(repo, depth=1, ref_selection=TagSelection("<1.10.0"))) == "v: v1.2.0\n"
    between = git("rev-parse", "HEAD~1", cwd=Path(repo.removeprefix("file://")))
    with pytest.raises(FetchError, match=f"git found no commit for ref '{between}'"):
        fetched(tmp_path / "c", Git(repo, between, depth=1))  # history beyond the depth is not fetched
    assert fetched(tmp_path / "d", Git(repo, between, depth=0)) == "v: between\n"


def secret(data: dict[str, str]):  # type: ignore[no-untyped-def]
    async def read(kind: str, name: str) -> Obj | None:
        return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}

    return read


def env_of(source: Git, transport: Transport, read, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    from kapply.controller.fetch import NO_PIN

    return asyncio.run(_git_env(source, transport, tmp_path, read, NO_PIN))


def test_force_http_basic_auth_sends_the_header_through_the_environment(tmp_path: Path):
    read = secret({"username": "u", "password": "p\r\nX-Injected: 1"})
    env = env_of(
        Git("https://git.example/r", secret="creds", force_http_basic_auth=True), Transport.HTTPS, read, tmp_path
    )
    value = env["GIT_CONFIG_VALUE_0"]
    assert (env["GIT_CONFIG_COUNT"], env["GIT_CONFIG_KEY_0"]) == ("1", "http.extraHeader")
    assert value == "Authorization: Basic " + base64.b64encode(b"u:p\r\nX-Injected: 1").decode()
    assert "\n" not in value and "GIT_CONFIG_KEY_0" not in env_of(
        Git("https://git.example/r", secret="creds"), Transport.HTTPS, read, tmp_path
    )


@pytest.mark.parametrize(
    ("source", "transport", "data", "message"),
    [
        (Git("https://git.example/r", force_http_basic_auth=True), Transport.HTTPS, {}, "with an https URL and a"),
        (Git("ssh://git.example/r", "", "", "c", force_http_basic_auth=True), Transport.SSH, {}, "with an https URL"),
        (
            Git("https://git.example/r", secret="c", force_http_basic_auth=True),
            Transport.HTTPS,
            {"ssh-privatekey": "k"},
            "Expected secret 'c' to have username and password (forceHTTPBasicAuth)",
        ),
    ],
)
def test_force_http_basic_auth_without_what_it_needs_is_refused(
    tmp_path: Path, source: Git, transport: Transport, data: dict[str, str], message: str
):
    with pytest.raises(FetchError) as refused:
        env_of(source, transport, secret(data), tmp_path)
    assert message in str(refused.value)


def test_lfs_skip_smudge_is_passed_to_git(tmp_path: Path):
    assert (
        env_of(Git("https://x", lfs_skip_smudge=True), Transport.HTTPS, nothing, tmp_path)["GIT_LFS_SKIP_SMUDGE"] == "1"
    )
    assert "GIT_LFS_SKIP_SMUDGE" not in env_of(Git("https://x"), Transport.HTTPS, nothing, tmp_path)
