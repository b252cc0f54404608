"""`kapply controller manifests`: what installs the controller, as one YAML stream to pipe into `kapply deploy`.

The App CRD, the packaging CRDs, the controller's RBAC and its Deployment (docs/reconciler.md, "Installing"). Their
one source is the repository's `config/` (config/controller/{crd,rbac,deployment}.yml, config/packaging/crds.yml); a
wheel carries copies of them as package data, `kapply/manifests/` (pyproject.toml's `force-include`), and a source
checkout (an editable install) reads `config/` itself. Without flags the files are printed as they are, comments
included; `--image` and `--namespace` print the same objects with those changed (as plain YAML, comments dropped);
`--crds-only` prints the CRDs alone (for a controller run out of cluster, or the packaging CRDs of docs/packages.md).
The controller's drift flags (`--default-drift-policy`, `--drift-watches`), given here, are added to the Deployment's
args. `--api-groups carvel` prints the same manifests under kapp-controller's names (`renamed`): its CRDs' groups and
names, the `carvel` category, its global namespace, RBAC for its groups, and the flag in the Deployment's args.
The image the Deployment names by default, `ghcr.io/kapply/kapply:<version>`, is what `make image` tags: no registry
serves it, so a cluster pulls it only once it is pushed there and named with `--image`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kapply.cli.command import Args, Command, FlagSection
from kapply.cli.controller_flags import API_GROUPS, DEFAULT_DRIFT_POLICY, DRIFT_FLAGS, DRIFT_WATCHES, choice
from kapply.cli.pflag import UsageError
from kapply.flags import TTY, Flag, Kind

if TYPE_CHECKING:
    from kapply.controller.vocabulary import Vocabulary
    from kapply.ui.output import Output

# (directory under config/ and under kapply/manifests/, file), in the order printed: CRDs, RBAC, Deployment.
MANIFESTS = (
    ("controller", "crd.yml"),
    ("packaging", "crds.yml"),
    ("controller", "rbac.yml"),
    ("controller", "deployment.yml"),
)
NAMESPACE = "kapply-system"  # the namespace the files name
LEASE_NAMESPACE_ARG = "--lease-namespace="
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")

INSTALL_NAMESPACE = Flag(
    "namespace",
    Kind.STRING,
    NAMESPACE,
    "Namespace of the controller's ServiceAccount, Deployment, leader Lease and its Role",
    short="n",
)
CRD_FILES = frozenset({("controller", "crd.yml"), ("packaging", "crds.yml")})
FLAGS = (
    Flag(
        "image",
        Kind.STRING,
        "",
        "Image of the controller's Deployment: your registry's copy of the one `make image` builds (default: "
        "ghcr.io/kapply/kapply:<version>, which is published nowhere)",
    ),
    INSTALL_NAMESPACE,
    Flag("crds-only", Kind.BOOL, False, "Print the CustomResourceDefinitions only (App, and the packaging ones)"),
    *DRIFT_FLAGS,
    API_GROUPS,
    TTY,
)
EXAMPLES = """
  # Install the controller, running the image you built (`make image`) and pushed to your registry
  kapply controller manifests --image registry.example/kapply:0.1.0 |
    kapply deploy -a kapply-controller -n kapply-system -f- -y

  # Install the CRDs only (App and packaging), for a controller run out of cluster
  kapply controller manifests --crds-only | kapply deploy -a kapply-crds -n kapply-system -f- -y

  # Put the controller's namespaced objects and its leader Lease in another namespace
  kapply controller manifests --image registry.example/kapply:0.1.0 -n ops

  # Serve kapp-controller's own API groups (where kapp-controller does not run), for its objects and kctrl
  kapply controller manifests --image registry.example/kapply:0.1.0 --api-groups carvel
"""


def manifests_command() -> Command:
    """The `manifests` child of `kapply controller`."""
    return Command(
        "manifests",
        "Print the CRDs, RBAC and Deployment that install the controller, as one YAML stream (kapply)",
        "kapply.cli.controller_manifests:manifests",
        flag_sections=(FlagSection("Flags", FLAGS),),
        examples=EXAMPLES,
    )


def manifest_directory() -> Path:
    """Where the manifests are: the wheel's package data, else (a source checkout) the repository's config/."""
    package = Path(__file__).resolve().parents[1]  # .../kapply
    packaged = package / "manifests"
    if packaged.is_dir():
        return packaged
    checkout = package.parents[1] / "config"  # src/kapply -> the repository
    if (checkout / "controller" / "deployment.yml").is_file():
        return checkout
    raise UsageError(f"The install manifests are missing: neither {packaged} nor {checkout} holds them")


def manifest_texts(crds_only: bool = False) -> list[tuple[str, str]]:
    """(`config/<dir>/<file>`, its text) for each manifest (or each of the CRDs' files), in order."""
    directory = manifest_directory()
    return [
        (f"config/{folder}/{name}", (directory / folder / name).read_text())
        for folder, name in MANIFESTS
        if not crds_only or (folder, name) in CRD_FILES
    ]


def stream(
    image: str = "",
    namespace: str = NAMESPACE,
    *,
    crds_only: bool = False,
    controller_args: tuple[str, ...] = (),
    vocabulary: Vocabulary | None = None,
) -> str:
    """The manifests as one YAML stream: verbatim, or with the image and namespace changed and `controller_args`
    (`--name=value`) set in the controller's args, or under another `vocabulary` than kapply's; or the CRDs alone."""
    from kapply import __version__

    what = "CRDs" if crds_only else "CRDs, RBAC and Deployment"
    header = f"# kapply {__version__}: the controller's {what} (`kapply controller manifests`)\n"
    texts = manifest_texts(crds_only)
    if not image and namespace == NAMESPACE and not controller_args and vocabulary is None:
        return header + "---\n".join(text if text.endswith("\n") else text + "\n" for _, text in texts)
    import yaml

    from kapply import yamlio

    documents = [
        document
        for source, text in texts
        for document in yamlio.load_all(text, source, UsageError)
        if document is not None
    ]
    for document in documents:
        _customize(document, image, namespace, controller_args)
        if vocabulary is not None:
            renamed(document, vocabulary)
    return header + "---\n".join(yaml.safe_dump(d, sort_keys=False, default_flow_style=False) for d in documents)


def _customize(document: dict[str, Any], image: str, namespace: str, controller_args: tuple[str, ...]) -> None:
    metadata = document.get("metadata") or {}
    if metadata.get("namespace") == NAMESPACE:
        metadata["namespace"] = namespace
    for subject in document.get("subjects") or []:
        if subject.get("namespace") == NAMESPACE:
            subject["namespace"] = namespace
    if document.get("kind") != "Deployment":
        return
    for container in document["spec"]["template"]["spec"]["containers"]:
        if image:
            container["image"] = image
        given = {arg.partition("=")[0] for arg in controller_args}
        container["args"] = [
            LEASE_NAMESPACE_ARG + namespace if arg == LEASE_NAMESPACE_ARG + NAMESPACE else arg
            for arg in container.get("args") or []
            if arg.partition("=")[0] not in given
        ] + list(controller_args)


def renamed(document: dict[str, Any], vocabulary: Vocabulary) -> None:
    """A manifest of config/ (written with kapply's names) under `vocabulary`'s: a CRD's group, name, category and
    global-namespace annotation; the API groups of RBAC rules."""
    from kapply.controller.vocabulary import KAPPLY
    from kapply.packaging.names import GLOBAL_NAMESPACE_ANNOTATION

    groups = dict(zip(KAPPLY.groups, vocabulary.groups, strict=True))
    if document.get("kind") == "CustomResourceDefinition":
        spec, metadata = document["spec"], document["metadata"]
        spec["group"] = groups[spec["group"]]
        metadata["name"] = f"{spec['names']['plural']}.{spec['group']}"
        categories = spec["names"].get("categories")
        if categories:
            spec["names"]["categories"] = sorted(
                {c for c in categories if c != KAPPLY.category} | {vocabulary.category}
            )
        annotations = metadata.get("annotations") or {}
        if GLOBAL_NAMESPACE_ANNOTATION in annotations:
            annotations[GLOBAL_NAMESPACE_ANNOTATION] = vocabulary.global_namespace
    for rule in document.get("rules") or []:
        rule["apiGroups"] = [groups.get(group, group) for group in rule.get("apiGroups") or []]


def manifests(args: Args, out: Output) -> None:
    namespace = args[INSTALL_NAMESPACE]
    if not DNS_LABEL.fullmatch(namespace):
        raise UsageError(f"--namespace {namespace!r} is not a namespace name (a DNS label)")
    controller_args = _drift_args(args)
    if args["crds-only"] and (args["image"] or namespace != NAMESPACE or controller_args):
        raise UsageError("--crds-only prints the CRDs alone: they name no image, no namespace and no controller flags")
    vocabulary = _vocabulary(args)
    if vocabulary is not None:
        controller_args += (f"--{API_GROUPS.name}={vocabulary.api_groups.value}",)
    out.block(
        stream(
            args["image"].strip(),
            namespace,
            crds_only=args["crds-only"],
            controller_args=controller_args,
            vocabulary=vocabulary,
        )
    )
    out.finish()


def _vocabulary(args: Args) -> Vocabulary | None:
    """`--api-groups`' vocabulary, None for the default (kapply's: the files as they are); imported only when given."""
    if args[API_GROUPS] == API_GROUPS.default:
        return None
    from kapply.controller.vocabulary import VOCABULARIES, ApiGroups

    return VOCABULARIES[choice(ApiGroups, API_GROUPS, args[API_GROUPS])]


def _drift_args(args: Args) -> tuple[str, ...]:
    """The controller's drift flags given other than their defaults (`--name=value`), checked as `kapply controller`
    checks them (what checks them is imported only when one is given: the command stays quick)."""
    given = [(flag, args[flag]) for flag in DRIFT_FLAGS if args[flag] != flag.default]
    if not given:
        return ()
    from kapply.api import DriftPolicy
    from kapply.controller.settings import DriftWatching

    choices: dict[str, type[StrEnum]] = {DEFAULT_DRIFT_POLICY.name: DriftPolicy, DRIFT_WATCHES.name: DriftWatching}
    return tuple(f"--{flag.name}={choice(choices[flag.name], flag, text).value}" for flag, text in given)
