"""The cue and sops template steps (kapply.controller.template_cue, template_sops) over untrusted files and Secrets:
their spec, every path confined to the fetch directory, nothing of the App's taken for an option, the keys written
only for the step's run and removed, never named in a message. cue and sops are shell scripts here that print what
they were given (tmp_path only); tests/e2e/test_template_tools.py runs the real ones."""

from __future__ import annotations

import asyncio
import base64
import os
import re
from pathlib import Path

import pytest
import yaml

from kapply.controller import sandbox_app
from kapply.controller.fetch import FetchPolicy
from kapply.controller.sandbox import Protection, Sandbox, SandboxLimits
from kapply.controller.spec import SopsKeys, SopsKind, SpecError, TemplateStep, TemplateTool, ValuesSource, parse_spec
from kapply.controller.template import TemplateError, template
from kapply.controller.template_cue import cue_args
from kapply.controller.template_sops import SopsError, dearmor, decrypted_name, sops_files
from kapply.errors import KapplyError
from kapply.objects import Obj
from tests.unit.fake_tools import fake_step_tool as fake
from tests.unit.fake_tools import fetch_directory, tree

AGE_KEY = "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The fetch directory; a canary beside it, outside."""
    return fetch_directory(tmp_path, {"canary.sops.yaml": "canary: true\n", "canary.cue": "canary: true\n"})


def secrets(**objects: dict[str, str]) -> tuple[list[tuple[str, str]], object]:
    """A ReadSource serving Secrets of these names (their data base64-encoded), and the list of reads it served."""
    reads: list[tuple[str, str]] = []

    async def read(kind: str, name: str) -> Obj | None:
        reads.append((kind, name))
        data = objects.get(name)
        if kind != "Secret" or data is None:
            return None
        return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}

    return reads, read


def run(steps: tuple[TemplateStep, ...], root: Path, read: object | None = None) -> str:
    if read is None:
        read = secrets()[1]
    return asyncio.run(template(steps, root, read, "app", "ns"))  # type: ignore[arg-type]


ECHO = (
    'echo "cwd: $PWD"\n'
    "echo \"path: '$PATH'\"\n"
    "echo \"registry: '$CUE_REGISTRY'\"\n"
    "echo \"proxy: '$HTTPS_PROXY'\"\n"
    "echo \"cache: '$CUE_CACHE_DIR'\"\n"
    'echo "args:"\n'
    'for a in "$@"; do echo "- \'$a\'"; done\n'
)


# --- spec -------------------------------------------------------------------------------------------------------------


def app(*template: dict) -> dict:
    return {
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {
            "serviceAccountName": "sa",
            "fetch": [{"inline": {}}],
            "template": list(template),
            "deploy": [{"kapp": {}}],
        },
    }


def test_the_cue_and_sops_fields_are_read_as_kapp_controller_names_them():
    spec = parse_spec(
        app(
            {"sops": {"age": {"privateKeysSecretRef": {"name": "keys"}}, "paths": ["secrets"]}},
            {
                "sops": {
                    "pgp": {"privateKeysSecretRef": {"name": "gpg"}},
                    "age": {"privateKeysSecretRef": {"name": "x"}},
                }
            },
            {
                "cue": {
                    "paths": ["config"],
                    "inputExpression": "values:",
                    "outputExpression": "objects",
                    "valuesFrom": [{"secretRef": {"name": "v"}}, {"path": "v.yaml"}],
                }
            },
        )
    )
    assert spec.template == (
        TemplateStep(TemplateTool.SOPS, paths=("secrets",), sops_keys=SopsKeys(SopsKind.AGE, "keys")),
        TemplateStep(TemplateTool.SOPS, sops_keys=SopsKeys(SopsKind.PGP, "gpg")),  # pgp first, as kapp-controller
        TemplateStep(
            TemplateTool.CUE,
            paths=("config",),
            values_from=(ValuesSource(secret="v"), ValuesSource(path="v.yaml")),
            input_expression="values:",
            output_expression="objects",
        ),
    )


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"sops": {}}, "Expected spec.template[0].sops to have pgp or age (Unsupported SOPS strategy)"),
        ({"sops": {"age": {}}}, "Expected spec.template[0].sops.age.privateKeysSecretRef.name to be non-empty"),
        ({"sops": {"pgp": {"privateKeysSecretRef": {"name": "../x"}}}}, "sops.pgp.privateKeysSecretRef.name"),
        ({"sops": {"age": {"privateKeysSecretRef": {"name": "k"}}, "paths": "x"}}, "sops.paths to be a list"),
        ({"cue": {"inputExpression": 1}}, "Expected spec.template[0].cue.inputExpression to be a string, got int"),
        ({"jsonnet": {}}, "Unsupported way to template (jsonnet; kapply templates with ytt, kustomize, helmTemplate"),
    ],
)
def test_a_malformed_step_is_refused_naming_its_field(step: dict, message: str):
    with pytest.raises(SpecError, match=re.escape(message)):
        parse_spec(app(step))


# --- cue --------------------------------------------------------------------------------------------------------------


def test_cue_gets_paths_as_relative_files_and_expressions_as_flag_values(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "cue", ECHO)
    tree(root, {"config/a.cue": "a: 1\n", "--foo": "b: 2\n", "values.yaml": "c: 3\n"})
    step = TemplateStep(
        TemplateTool.CUE,
        paths=("config", "--foo"),
        input_expression="--expression=evil",
        output_expression="-e",
        values_from=(ValuesSource(path="values.yaml"), ValuesSource(secret="vals")),
    )
    reads, read = secrets(vals={"from-secret.yaml": "d: 4\n"})
    ran = yaml.safe_load(run((step,), root, read))
    args = ran["args"]
    assert args[:4] == ["export", "--out=yaml", "./config", "./--foo"]
    assert args[4] == "--path=--expression=evil"
    assert args[5] == str((root / "values.yaml").resolve())
    assert args[6].endswith("/values-1/from-secret.yaml") and os.path.isabs(args[6])
    assert args[7:] == ["--expression=-e"]
    assert reads == [("Secret", "vals")]
    assert ran["cwd"] == str(root)
    assert ran["path"] == "" and ran["registry"] == "none" and ran["proxy"] == "http://127.0.0.1:0"
    assert ran["cache"].endswith("/cue-cache") and not ran["cache"].startswith(str(root))


def test_cue_without_paths_exports_the_fetch_directorys_package(root: Path):
    assert cue_args(TemplateStep(TemplateTool.CUE), root, []) == ["export", "--out=yaml", "."]


def test_cue_paths_are_read_as_kapp_controller_reads_them_within_the_fetch_directory(root: Path):
    tree(root, {"config/a.cue": "a: 1\n"})
    step = TemplateStep(TemplateTool.CUE, paths=("/config", "config/../config/a.cue", "/"))
    assert cue_args(step, root, []) == ["export", "--out=yaml", "./config", "./config/a.cue", "."]


@pytest.mark.parametrize(
    ("paths", "links", "message"),
    [
        (("../outside/canary.cue",), {}, "Templating dir: Invalid path: ../outside/canary.cue"),
        (("/../outside/canary.cue",), {}, "Templating dir: Invalid path: /../outside/canary.cue"),
        (("out.cue",), {"out.cue": "../outside/canary.cue"}, "a symlink on it leads outside"),
        (("dir/canary.cue",), {"dir": "../outside"}, "a symlink on it leads outside"),
    ],
)
def test_cue_paths_leaving_the_fetch_directory_are_refused_before_cue_runs(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, paths: tuple[str, ...], links: dict, message: str
):
    fake(tmp_path, monkeypatch, "cue", "/usr/bin/touch ran\n" + ECHO)
    tree(root, {}, links)
    with pytest.raises(TemplateError, match=re.escape(message)):
        run((TemplateStep(TemplateTool.CUE, paths=paths),), root)
    assert not (root / "ran").exists()


def test_cue_cannot_read_a_previous_steps_output(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "cue", ECHO)
    fake(tmp_path, monkeypatch, "kbld", "echo 'a: 1'\n")
    with pytest.raises(KapplyError, match="Templating stream is not supported by cue: make it the first template step"):
        run((TemplateStep(TemplateTool.KBLD), TemplateStep(TemplateTool.CUE)), root)


def test_a_failing_cue_names_the_step_and_keeps_its_words(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "cue", "echo 'reference \"x\" not found' >&2\nexit 1\n")
    with pytest.raises(TemplateError, match=r"^Templating dir: cue failed \(exit status 1\)$") as failed:
        run((TemplateStep(TemplateTool.CUE),), root)
    assert failed.value.stderr == 'reference "x" not found'


# --- sops -------------------------------------------------------------------------------------------------------------

# A fake sops: prints, as the plain file, the file it was given and what it saw of its keys and environment (its
# PATH is empty: programs by their path).
SOPS = (
    'for a in "$@"; do last="$a"; done\n'
    "echo \"file: '$last'\"\n"
    "echo \"args: '$*'\"\n"
    "echo \"path: '$PATH'\"\n"
    "echo \"order: '$SOPS_DECRYPTION_ORDER'\"\n"
    'if [ -n "$SOPS_AGE_KEY_FILE" ]; then\n'
    "  echo \"keyfile: '$SOPS_AGE_KEY_FILE'\"\n"
    '  echo "mode: \'$(/usr/bin/stat -c %a "$SOPS_AGE_KEY_FILE")\'"\n'
    "  echo \"key: '$(/usr/bin/cat \"$SOPS_AGE_KEY_FILE\" | /usr/bin/tr '\\n' '|')'\"\n"
    "fi\n"
    'if [ -n "$GNUPGHOME" ]; then\n'
    "  echo \"gnupghome: '$GNUPGHOME'\"\n"
    '  echo "mode: \'$(/usr/bin/stat -c %a "$GNUPGHOME")\'"\n'
    '  echo "ring: \'$(/usr/bin/base64 -w0 "$GNUPGHOME/secring.gpg")\'"\n'
    "fi\n"
)


def age_step(*paths: str) -> TemplateStep:
    return TemplateStep(TemplateTool.SOPS, paths=paths, sops_keys=SopsKeys(SopsKind.AGE, "keys"))


def test_sops_files_are_decrypted_in_place_with_the_secrets_age_keys_which_are_then_removed(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    tree(root, {"a.sops.yaml": "enc\n", "sub/b.sops.yml": "enc\n", "c.yaml": "plain: 1\n", "d.sops.json": "{}\n"})
    reads, read = secrets(keys={"key.txt": f"# a comment\n{AGE_KEY}", "more.txt": "AGE-SECRET-KEY-1OTHER"})
    assert run((age_step(),), root, read) == ""  # sops prints nothing for kapp
    assert reads == [("Secret", "keys")]
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == [
        "a.yaml",
        "c.yaml",
        "d.sops.json",  # not a sops file kapp-controller decrypts
        "sub/b.yml",
    ]
    a = yaml.safe_load((root / "a.yaml").read_text())
    assert a["file"] == str((root / "a.sops.yaml").resolve())
    assert a["args"].startswith("--config=") and a["args"].endswith(f"--decrypt {a['file']}")
    assert a["path"] == "" and a["order"] == "age,pgp" and a["mode"] == "600"
    assert a["key"] == f"# a comment|{AGE_KEY}|AGE-SECRET-KEY-1OTHER|"  # every value, in key order, each ended
    assert not Path(a["keyfile"]).exists() and not Path(a["keyfile"]).parent.exists()  # removed after the step
    assert not str(a["keyfile"]).startswith(str(root))
    assert oct((root / "a.yaml").stat().st_mode & 0o777) == "0o600"
    assert yaml.safe_load((root / "c.yaml").read_text()) == {"plain": 1}


def test_sops_with_paths_decrypts_those_files_and_the_files_within_those_directories_only(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    tree(root, {"a.sops.yaml": "enc\n", "dir/b.sops.yaml": "enc\n", "other/c.sops.yaml": "enc\n", "--x.sops.yml": ""})
    run((age_step("a.sops.yaml", "dir", "--x.sops.yml"),), root, secrets(keys={"k": AGE_KEY})[1])
    assert (root / "a.yaml").exists() and (root / "dir/b.yaml").exists() and (root / "--x.yml").exists()
    assert (root / "other/c.sops.yaml").exists() and not (root / "other/c.yaml").exists()
    assert yaml.safe_load((root / "--x.yml").read_text())["file"] == str((root / "--x.sops.yml").resolve())


def test_pgp_keys_are_dearmored_into_a_private_gnupg_home(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    tree(root, {"a.sops.yaml": "enc\n"})
    packets = b"\x95\x01\x02secret-key-packets"
    armored = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: test\n\n"
        + base64.b64encode(packets).decode()
        + "\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----\n"
    )
    step = TemplateStep(TemplateTool.SOPS, sops_keys=SopsKeys(SopsKind.PGP, "gpg"))
    run((step,), root, secrets(gpg={"private.asc": armored})[1])
    a = yaml.safe_load((root / "a.yaml").read_text())
    assert base64.b64decode(a["ring"]) == packets and a["mode"] == "700"
    assert not Path(a["gnupghome"]).exists()


def test_dearmor_reads_every_block_with_or_without_headers_and_crlf():
    block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\r\n\r\n{}\r\n=CRC1\r\n-----END PGP PRIVATE KEY BLOCK-----\r\n"
    text = block.format(base64.b64encode(b"one").decode()) + "junk\n" + block.format(base64.b64encode(b"two").decode())
    assert dearmor(text, "s") == b"onetwo"


@pytest.mark.parametrize(
    "text",
    [
        "no key here",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n",
    ],
)
def test_a_secret_without_private_keys_is_refused_naming_the_secret_never_its_content(text: str):
    with pytest.raises(SopsError) as refused:
        dearmor(text, "gpg")
    assert "secret 'gpg'" in str(refused.value) and "AAAA" not in str(refused.value)


def test_a_malformed_armored_block_is_refused_without_its_content():
    text = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nSECRET!!material\n-----END PGP PRIVATE KEY BLOCK-----\n"
    with pytest.raises(SopsError, match="a block is not base64") as refused:
        dearmor(text, "gpg")
    assert "SECRET" not in str(refused.value)


def test_a_missing_key_secret_fails_naming_it(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    tree(root, {"a.sops.yaml": "enc\n"})
    with pytest.raises(KapplyError, match="^Building config: Getting private keys secret: Secret 'keys' not found$"):
        run((age_step(),), root)
    assert (root / "a.sops.yaml").exists()


@pytest.mark.parametrize(
    ("paths", "links", "message"),
    [
        (("../outside/canary.sops.yaml",), {}, "Decrypting dir: Invalid path: ../outside/canary.sops.yaml"),
        (("/etc/shadow",), {}, "Decrypting dir: Checking path: '/etc/shadow' does not exist"),  # the fetch dir's
        (("x.sops.yaml",), {"x.sops.yaml": "../outside/canary.sops.yaml"}, "a symlink on it leads outside"),
        (("dir",), {"dir": "../outside"}, "a symlink on it leads outside"),
        ((), {"x.sops.yaml": "../outside/canary.sops.yaml"}, "a symlink on it leads outside"),
        (("missing.sops.yaml",), {}, "Decrypting dir: Checking path: 'missing.sops.yaml' does not exist"),
    ],
)
def test_sops_paths_leaving_the_fetch_directory_are_refused_before_any_key_is_read(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, paths: tuple[str, ...], links: dict, message: str
):
    fake(tmp_path, monkeypatch, "sops", f"/usr/bin/touch {tmp_path}/ran\n" + SOPS)
    tree(root, {}, links)
    reads, read = secrets(keys={"k": AGE_KEY})
    with pytest.raises(TemplateError, match=re.escape(message)):
        run((age_step(*paths),), root, read)
    assert reads == [] and not (tmp_path / "ran").exists()
    assert (root.parent / "outside" / "canary.sops.yaml").read_text() == "canary: true\n"


def test_a_decrypted_file_replaces_a_symlink_in_its_place_instead_of_writing_through_it(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    tree(root, {"a.sops.yaml": "enc\n", "target.yaml": "untouched\n"}, {"a.yaml": "target.yaml"})
    run((age_step(),), root, secrets(keys={"k": AGE_KEY})[1])
    assert not (root / "a.yaml").is_symlink() and (root / "target.yaml").read_text() == "untouched\n"


def test_a_failing_sops_names_the_file_and_keeps_its_words_but_not_the_key(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(
        tmp_path,
        monkeypatch,
        "sops",
        "echo 'Error getting data key: 0 successful groups required, got 0' >&2\nexit 128\n",
    )
    tree(root, {"sub/a.sops.yaml": "enc\n"})
    with pytest.raises(TemplateError) as failed:
        run((age_step(),), root, secrets(keys={"k": AGE_KEY})[1])
    assert str(failed.value) == "Decrypting dir: Decrypting file 'sub/a.sops.yaml': sops failed (exit status 128)"
    assert "0 successful groups" in failed.value.stderr and AGE_KEY not in failed.value.stderr
    assert (root / "sub/a.sops.yaml").exists()  # left as it was


def test_sops_cannot_decrypt_a_previous_steps_output(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "kbld", "echo 'a: 1'\n")
    with pytest.raises(KapplyError, match="Templating data is not supported by sops"):
        run((TemplateStep(TemplateTool.KBLD), age_step()), root)


def test_a_step_after_sops_reads_the_decrypted_directory(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch):
    fake(tmp_path, monkeypatch, "sops", SOPS)
    fake(tmp_path, monkeypatch, "cue", ECHO)
    tree(root, {"a.sops.yaml": "enc\n"})
    ran = yaml.safe_load(run((age_step(), TemplateStep(TemplateTool.CUE)), root, secrets(keys={"k": AGE_KEY})[1]))
    assert ran["args"] == ["export", "--out=yaml", "."] and (root / "a.yaml").exists()


def test_the_names_of_decrypted_files_drop_sops():
    assert decrypted_name("secret.sops.yaml") == "secret.yaml"
    assert decrypted_name("secret.sops.yml") == "secret.yml"
    assert decrypted_name(".sops.yaml") == ".yaml"
    assert decrypted_name("secret.yaml") is None and decrypted_name("sops.yaml") is None


def test_sops_files_are_listed_in_order_without_walking_symlinked_directories(root: Path):
    tree(root, {"b/x.sops.yaml": "", "a.sops.yml": "", "real/y.sops.yaml": ""}, {"linked": "real"})
    assert [shown for _, _, shown in sops_files((), root)] == ["a.sops.yml", "b/x.sops.yaml", "real/y.sops.yaml"]


# --- in the sandbox ---------------------------------------------------------------------------------------------------


def test_in_the_sandbox_the_keys_live_in_the_jobs_directory_only_for_the_step_and_the_tools_see_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY")
    seen = f'echo "key: $SOPS_AGE_KEY_FILE"; /usr/bin/cat {canary} 2>/dev/null || echo "sops: unseen"\n'
    fake(tmp_path, monkeypatch, "sops", seen)
    fake(
        tmp_path, monkeypatch, "cue", f'/usr/bin/cat a.yaml; /usr/bin/cat {canary} 2>/dev/null || echo "cue: unseen"\n'
    )
    the_app = {
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {
            "serviceAccountName": "sa",
            "fetch": [{"inline": {"paths": {"a.sops.yaml": "enc\n"}}}],
            "template": [{"sops": {"age": {"privateKeysSecretRef": {"name": "keys"}}}}, {"cue": {}}],
            "deploy": [{"kapp": {}}],
        },
    }
    reads, read = secrets(keys={"key.txt": AGE_KEY})

    async def go() -> tuple[str, frozenset[Protection]]:
        sandbox = Sandbox(SandboxLimits(memory=512 << 20, cpu=20, wall=60))
        protections = await sandbox.protections()
        done = await sandbox.run("app", sandbox_app.request(the_app, FetchPolicy()), read)  # type: ignore[arg-type]
        return sandbox_app.result(done)[1], protections

    manifests, protections = asyncio.run(go())
    lines = manifests.splitlines()
    key = Path(lines[0].removeprefix("key: "))
    assert key.name == "key.txt" and key.parent.name == "sops-keys" and "kapply-sandbox-" in str(key)
    assert not key.exists() and not key.parent.exists()
    assert reads == [("Secret", "keys")]
    if Protection.TOOL_FILES in protections:
        assert lines[1:] == ["sops: unseen", "cue: unseen"]
