"""Fetching an App's sources as untrusted input: paths confined after following symlinks, the fetched tree checked
(symlinks, hard links, special files, limits), git URLs and refs that could become options or commands refused, and
git run so that the attacks it used to allow find nothing (tmp_path only; git runs on local repositories)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from kapply.controller.fetch import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_FILES,
    FetchError,
    FetchPolicy,
    Limits,
    Transport,
    check_listing,
    check_tree,
    confined,
    fetch,
    git_ref,
    git_url,
)
from kapply.controller.spec import FetchSource, Git, Inline, SourceRef
from kapply.objects import Obj

ALLOW = FetchPolicy(allow_file_urls=True, limits=Limits())
DENY = FetchPolicy(allow_file_urls=False, limits=Limits())


def tree(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(content)
    for relative, target in (links or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / relative)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A canary directory next to the fetch directory, holding a secret."""
    return tree(tmp_path / "outside", {"secret.txt": "CANARY", "dir/file.txt": "CANARY"})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


# --- confined ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/etc/passwd", "a/\0b", ".."])
def test_confined_refuses_paths_that_leave_the_root_by_their_text(root: Path, relative: str):
    with pytest.raises(FetchError, match=r"^Invalid path: "):
        confined(root, relative)


def test_confined_resolves_symlinks_and_refuses_one_that_leads_outside(root: Path, outside: Path):
    tree(root, {"real/file.yml": "x"}, {"inside": "real", "absolute": str(outside), "climbing": "../outside"})
    assert confined(root, "inside/file.yml") == (root / "real" / "file.yml").resolve()
    assert confined(root, "inside/not-yet") == (root / "real" / "not-yet").resolve()
    assert confined(root, ".") == root.resolve()
    for relative in ("absolute", "absolute/dir", "climbing/secret.txt"):
        with pytest.raises(FetchError) as refused:
            confined(root, relative, "the repository")
        assert str(refused.value) == f"Invalid path: {relative} (a symlink on it leads outside the repository)"


def test_confined_refuses_a_sibling_whose_name_starts_like_the_root(tmp_path: Path, root: Path):
    (tmp_path / "root-sibling").mkdir()
    tree(root, {}, {"link": "../root-sibling"})
    with pytest.raises(FetchError, match="leads outside"):
        confined(root, "link")


# --- check_tree -------------------------------------------------------------------------------------------------------

SYMLINK_OUTSIDE = "Checking symlinks: Expected symlink '{}' to point within the fetched directory"


@pytest.mark.parametrize(
    ("links", "refused"),
    [
        pytest.param({"chart/stolen.txt": "{outside}/secret.txt"}, "chart/stolen.txt", id="absolute"),
        pytest.param({"chart/files": "../../outside/dir"}, "chart/files", id="relative-climbing"),
        pytest.param({"up": "../../../../../../../../../.."}, "up", id="relative-to-the-filesystem-root"),
        pytest.param({"a": "b", "b": "c", "c": "../outside"}, "a", id="chain-leaving-at-its-end"),
        pytest.param({"dangling": "missing/../../outside/x"}, "dangling", id="dangling-outside"),
        pytest.param({"inside": "{root}/file.yml"}, "inside", id="absolute-even-to-inside"),
        pytest.param({"d/link": "../d/../../outside"}, "d/link", id="dot-dot-through-a-directory"),
    ],
)
def test_symlinks_pointing_outside_are_refused_naming_the_link_not_its_target(
    root: Path, outside: Path, links: dict[str, str], refused: str
):
    targets = {k: v.format(outside=outside, root=root) for k, v in links.items()}
    tree(root, {"file.yml": "x", "d/x": "y"}, targets)
    with pytest.raises(FetchError) as error:
        check_tree(root, Limits())
    assert str(error.value) == SYMLINK_OUTSIDE.format(refused)
    assert "CANARY" not in str(error.value) and str(outside) not in str(error.value)


def test_symlinks_within_dangling_ones_inside_and_chains_inside_pass(root: Path):
    tree(
        root,
        {"chart/values.yaml": "a: b", "shared/x.yml": "x"},
        {"chart/shared": "../shared", "a": "b", "b": "chart/values.yaml", "dangling": "not-there", "self": "."},
    )
    check_tree(root, Limits())


def test_a_symlink_loop_is_refused(root: Path):
    tree(root, {}, {"loop-a": "loop-b", "loop-b": "loop-a"})
    with pytest.raises(FetchError, match="Expected symlink 'loop-a' to resolve, but it is part of a loop"):
        check_tree(root, Limits())


def test_names_carry_the_source_path_as_prefix(root: Path, outside: Path):
    tree(root, {}, {"chart/stolen.txt": str(outside / "secret.txt")})
    with pytest.raises(FetchError, match=r"'config/chart/stolen.txt'"):
        check_tree(root, Limits(), "config")


def test_a_hard_link_is_refused(root: Path, outside: Path):
    os.link(outside / "secret.txt", root / "stolen.txt")
    with pytest.raises(FetchError) as error:
        check_tree(root, Limits())
    assert str(error.value) == "Checking hard links: Expected 'stolen.txt' not to be a hard link"


def test_a_fifo_is_refused(root: Path):
    os.mkfifo(root / "pipe")
    with pytest.raises(FetchError, match="Expected 'pipe' to be a file, a directory or a symlink"):
        check_tree(root, Limits())


def test_limits_on_bytes_files_and_depth(root: Path):
    tree(root, {"a/b/c/file": "x" * 10, "a/b/other": "y" * 10})
    check_tree(root, Limits(max_bytes=20, max_files=5, max_depth=3))  # a, a/b, a/b/c and two files
    with pytest.raises(FetchError) as error:
        check_tree(root, Limits(max_bytes=19))
    assert str(error.value) == "Checking size: Expected at most 19 bytes of files (KAPPLY_FETCH_MAX_BYTES)"
    with pytest.raises(FetchError) as error:
        check_tree(root, Limits(max_files=4))
    assert str(error.value) == "Checking size: Expected at most 4 files and directories (KAPPLY_FETCH_MAX_FILES)"
    with pytest.raises(FetchError) as error:
        check_tree(root, Limits(max_depth=2))
    assert str(error.value) == "Checking size: Expected directories nested at most 2 deep (KAPPLY_FETCH_MAX_DEPTH)"


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    assert Limits.from_environment({}) == Limits(MAX_BYTES, MAX_FILES, MAX_DEPTH) == Limits()
    assert (MAX_BYTES, MAX_FILES, MAX_DEPTH) == (1 << 30, 100_000, 64)
    environ = {"KAPPLY_FETCH_MAX_BYTES": "10", "KAPPLY_FETCH_MAX_FILES": "2", "KAPPLY_FETCH_MAX_DEPTH": "1"}
    assert Limits.from_environment(environ) == Limits(10, 2, 1)
    monkeypatch.setenv("KAPPLY_FETCH_MAX_FILES", "7")
    assert FetchPolicy().limits == Limits(max_files=7)
    for bad in ("-1", "0", "1e3", "ten", "١٢"):
        with pytest.raises(FetchError, match=r"Expected \$KAPPLY_FETCH_MAX_DEPTH to be a positive integer"):
            Limits.from_environment({"KAPPLY_FETCH_MAX_DEPTH": bad})


def test_a_git_listing_is_checked_before_anything_is_written():
    listing = "".join(
        f"100644 blob {'0' * 40} {size:>7}\t{path}\0" for path, size in (("a/b/c.yml", 10), ("d.yml", 20), ("sub", 0))
    ).replace(f"100644 blob {'0' * 40}       0\tsub", f"160000 commit {'0' * 40}       -\tsub")
    check_listing(listing, Limits(max_bytes=30, max_files=3, max_depth=2))
    with pytest.raises(FetchError, match="KAPPLY_FETCH_MAX_BYTES"):
        check_listing(listing, Limits(max_bytes=29))
    with pytest.raises(FetchError, match="KAPPLY_FETCH_MAX_FILES"):
        check_listing(listing, Limits(max_files=2))
    with pytest.raises(FetchError, match="KAPPLY_FETCH_MAX_DEPTH"):
        check_listing(listing, Limits(max_depth=1))


# --- git URLs and refs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("https://github.com/example/config", Transport.HTTPS),
        ("https://user:token@git.example.com/config.git", Transport.HTTPS),
        ("http://git.internal:8080/config.git", Transport.HTTP),
        ("ssh://git@github.com/example/config.git", Transport.SSH),
        ("git+ssh://git@github.com/example/config.git", Transport.SSH),
        ("git@github.com:example/config.git", Transport.SSH),
        ("github.com:example/config.git", Transport.SSH),
        ("[::1]:example/config.git", Transport.SSH),
    ],
)
def test_remote_urls_are_allowed(url: str, transport: Transport):
    assert git_url(url, DENY, "spec.fetch[0].git.url") is transport


@pytest.mark.parametrize("url", ["file:///srv/repo.git", "FILE:///srv/repo.git", "/srv/repo.git", "./repo", "repo"])
def test_file_urls_and_local_paths_need_the_flag(url: str):
    assert git_url(url, ALLOW, "spec.fetch[0].git.url") is Transport.FILE
    with pytest.raises(FetchError) as refused:
        git_url(url, DENY, "spec.fetch[0].git.url")
    assert str(refused.value) == (
        "Expected spec.fetch[0].git.url to be an https, http or ssh URL: file:// URLs and local paths read the "
        "controller's own disk (allowed only with its --dangerous-allow-file-urls)"
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("--upload-pack=touch /tmp/x", "not to start with '-'"),
        ("-u", "not to start with '-'"),
        ("ext::sh -c touch% /tmp/x", "not to name a git remote helper ('<transport>::<address>')"),
        ("fd::3", "not to name a git remote helper"),
        ("https::example.com/repo", "not to name a git remote helper"),
        ("ftp://example.com/repo.git", "to be an https, http or ssh URL, got 'ftp://'"),
        ("git://example.com/repo.git", "to be an https, http or ssh URL, got 'git://'"),
        ("ssh://-oProxyCommand=touch%20x/repo", "to have no host or user starting with '-'"),
        ("ssh://-oProxyCommand=x@host/repo", "to have no host or user starting with '-'"),
        ("-oProxyCommand=x:repo", "not to start with '-'"),
        ("git@-oProxyCommand=x:repo", "to have no host or user starting with '-'"),
        ("[-oProxyCommand=x]:repo", "to have no host or user starting with '-'"),
        ("https://example.com/repo\n", "to have no control characters"),
        ("https://[::1/repo", "to be a URL: "),
    ],
)
def test_urls_that_could_run_a_command_are_refused_even_with_the_flag(url: str, message: str):
    with pytest.raises(FetchError) as refused:
        git_url(url, ALLOW, "spec.fetch[0].git.url")
    assert str(refused.value).startswith(f"Expected spec.fetch[0].git.url {message}")


def test_refs():
    assert git_ref("origin/main", "ref") == "main"
    assert git_ref("v1.2.0", "ref") == "v1.2.0"
    assert git_ref("", "ref") == "HEAD"
    for ref in ("--pathspec-from-file=/etc/passwd", "-b", "origin/--orphan"):
        with pytest.raises(FetchError) as refused:
            git_ref(ref, "spec.fetch[0].git.ref")
        assert str(refused.value) == "Expected spec.fetch[0].git.ref not to start with '-'"
    for ref in ("main branch", "main\n--x", "a\tb"):
        with pytest.raises(FetchError, match="Expected ref to have no spaces or control characters"):
            git_ref(ref, "ref")


# --- fetch ------------------------------------------------------------------------------------------------------------


async def nothing(kind: str, name: str) -> Obj | None:
    return None


def run_fetch(sources: tuple[FetchSource, ...], root: Path, policy: FetchPolicy = ALLOW, read=nothing) -> str:
    return asyncio.run(fetch(sources, root, read, policy))


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repository(path: Path, files: dict[str, str], links: dict[str, str] | None = None) -> str:
    tree(path, files, links)
    git("init", "-q", "--initial-branch=main", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "x", cwd=path)
    return f"file://{path}"


def contents(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): "<link>" if p.is_symlink() else "<dir>" if p.is_dir() else p.read_text()
        for p in sorted(directory.rglob("*"))
    }


def test_inline_names_are_confined_and_written(root: Path, outside: Path):
    run_fetch((FetchSource("", inline=Inline((("a/b.yml", "x"), ("c.yml", "y")))),), root)
    assert contents(root) == {"a": "<dir>", "a/b.yml": "x", "c.yml": "y"}
    for name in ("../outside/planted", str(outside / "planted")):
        with pytest.raises(FetchError, match="^Invalid path: "):
            run_fetch((FetchSource("", inline=Inline(((name, "x"),))),), root)
    assert not (outside / "planted").exists()


def test_an_inline_file_over_a_directory_is_an_error_not_a_crash(root: Path):
    with pytest.raises(FetchError, match="^Writing 'a': Is a directory"):
        run_fetch((FetchSource("", inline=Inline((("a/b", "x"), ("a", "y")))),), root)


def test_a_source_path_through_an_earlier_sources_symlink_is_refused(root: Path, outside: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"cm.yml": "x"}, {"etc": str(outside)})
    sources = (FetchSource("", git=Git(url, "main")), FetchSource("etc/planted", inline=Inline((("x", "y"),))))
    with pytest.raises(FetchError, match=SYMLINK_OUTSIDE.format("etc")):  # the git source is refused first
        run_fetch(sources, root)
    assert not (outside / "planted").exists()


def test_paths_from_secrets_and_config_maps_are_written_under_their_directory(root: Path):
    async def read(kind: str, name: str) -> Obj | None:
        return {"data": {"k.yml": "Y29udGVudA=="}} if kind == "Secret" else {"data": {"k.yml": "plain"}}

    sources = (
        FetchSource(
            "",
            inline=Inline(paths_from=(SourceRef("Secret", "s", "secret"), SourceRef("ConfigMap", "c", "a/b"))),
        ),
    )
    run_fetch(sources, root, read=read)
    assert contents(root)["secret/k.yml"] == "content" and contents(root)["a/b/k.yml"] == "plain"


def test_a_sub_path_through_a_symlink_moves_and_deletes_nothing(root: Path, outside: Path, tmp_path: Path):
    before = contents(outside)
    url = repository(tmp_path / "repo", {"d/cm.yml": "x"}, {"d/etc": str(outside), "d/up": "../../../../../../../.."})
    for sub_path in ("d/etc", f"d/up/{str(outside).lstrip('/')}"):
        with pytest.raises(FetchError) as refused:
            run_fetch((FetchSource("", git=Git(url, "main", sub_path)),), root)
        assert str(refused.value) == (
            f"Fetching git {url}: Invalid path: {sub_path} (a symlink on it leads outside the repository)"
        )
    assert contents(outside) == before
    assert contents(root) == {}


def test_git_copies_the_sub_path_and_nothing_of_git_and_names_the_commit(root: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"app/cm.yml": "x", "app/shared/y.yml": "y", "other/z.yml": "z"})
    commit = git("rev-parse", "HEAD", cwd=tmp_path / "repo")
    (tmp_path / "repo" / "app" / "uncommitted.yml").write_text("not fetched")
    lock = run_fetch((FetchSource("", git=Git(url, "origin/main", "app")),), root)
    assert contents(root) == {"cm.yml": "x", "shared": "<dir>", "shared/y.yml": "y"}
    assert f"sha: {commit}" in lock
    assert contents(tmp_path / "repo" / "app") == {
        "cm.yml": "x",
        "shared": "<dir>",
        "shared/y.yml": "y",
        "uncommitted.yml": "not fetched",
    }


def test_refs_resolve_to_commits_branch_first_then_tag_then_sha(root: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"v.yml": "1"})
    first = git("rev-parse", "HEAD", cwd=tmp_path / "repo")
    git("tag", "v1", cwd=tmp_path / "repo")
    (tmp_path / "repo" / "v.yml").write_text("2")
    git("commit", "-q", "-am", "second", cwd=tmp_path / "repo")
    for ref, expected in (("main", "2"), ("v1", "1"), (first, "1"), ("", "2")):
        target = root / (ref or "head")
        run_fetch((FetchSource("", git=Git(url, ref)),), target)
        assert (target / "v.yml").read_text() == expected
    with pytest.raises(FetchError, match="git found no commit for ref 'nope'"):
        run_fetch((FetchSource("", git=Git(url, "nope")),), root / "nope")


def test_the_pathspec_injection_reads_nothing(root: Path, outside: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"cm.yml": "x"})
    with pytest.raises(FetchError) as refused:
        run_fetch((FetchSource("", git=Git(url, f"--pathspec-from-file={outside / 'secret.txt'}")),), root)
    assert "CANARY" not in f"{refused.value}{refused.value.stderr}"
    assert str(refused.value) == "Expected spec.fetch[0].git.ref not to start with '-'"


def test_file_urls_are_refused_without_the_policy(root: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"cm.yml": "x"})
    with pytest.raises(FetchError, match="--dangerous-allow-file-urls"):
        run_fetch((FetchSource("", git=Git(url, "main")),), root, DENY)
    assert contents(root) == {}


def test_submodules_are_never_cloned(root: Path, tmp_path: Path):
    repository(tmp_path / "inner", {"secret.yml": "CANARY"})
    url = repository(tmp_path / "repo", {"cm.yml": "x"})
    git("submodule", "add", "-q", f"file://{tmp_path / 'inner'}", "sub", cwd=tmp_path / "repo")
    git("commit", "-q", "-m", "submodule", cwd=tmp_path / "repo")
    run_fetch((FetchSource("", git=Git(url, "main")),), root)
    assert contents(root) == {".gitmodules": contents(root)[".gitmodules"], "cm.yml": "x", "sub": "<dir>"}


def test_a_repository_over_the_limits_is_refused_before_its_files_are_written(root: Path, tmp_path: Path):
    url = repository(tmp_path / "repo", {"zeros.txt": "0" * 100_000, "a/b/c/d.yml": "x"})
    for limits, variable in (
        (Limits(max_bytes=50_000), "KAPPLY_FETCH_MAX_BYTES"),
        (Limits(max_files=1), "KAPPLY_FETCH_MAX_FILES"),
        (Limits(max_depth=2), "KAPPLY_FETCH_MAX_DEPTH"),
    ):
        with pytest.raises(FetchError, match=variable):
            run_fetch((FetchSource("", git=Git(url, "main")),), root, FetchPolicy(True, limits))
    assert contents(root) == {}


def test_all_sources_together_are_within_the_limits(root: Path):
    sources = tuple(FetchSource(str(i), inline=Inline(((f"{i}.yml", "x" * 10),))) for i in range(3))
    run_fetch(sources, root, FetchPolicy(False, Limits(max_bytes=30)))
    with pytest.raises(FetchError, match="KAPPLY_FETCH_MAX_BYTES"):
        run_fetch(sources, root / "again", FetchPolicy(False, Limits(max_bytes=29)))
