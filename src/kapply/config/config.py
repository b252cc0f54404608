"""kapp's Config resource (`apiVersion: kapp.k14s.io/v1alpha1`, `kind: Config`): its rules and parsing."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kapply.config.decode import Decoder
from kapply.config.matchers import Matcher, parse_matchers
from kapply.config.paths import Path, parse_path
from kapply.config.ytt import YttOverlay, recognise_overlay
from kapply.errors import ConfigError
from kapply.objects import CONFIG_API_VERSION

CONFIG_KIND = "Config"

# The kapp release whose behaviour kapply reproduces; checked against minimumRequiredVersion.
KAPP_COMPAT_VERSION = "0.64.2"


class RebaseType(StrEnum):
    COPY = "copy"
    REMOVE = "remove"


class Source(StrEnum):
    """Where a copy rebase rule takes values from: the resource being deployed or the live one."""

    NEW = "new"
    EXISTING = "existing"


class PreflightCheck(StrEnum):
    CRD_UPGRADE_SAFETY = "CRDUpgradeSafety"
    PERMISSION_VALIDATION = "PermissionValidation"


@dataclass(frozen=True, slots=True)
class RebaseRule:
    type: RebaseType
    paths: tuple[Path, ...]
    sources: tuple[Source, ...]  # first preferred; unused by remove
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class YttRebaseRule:
    overlay: YttOverlay
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class PathRule:
    """A path on matching resources: ownership labels, field exclusions and diff masks."""

    path: Path
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class LabelScopingRule:
    path: Path
    is_default: bool  # skipped when default label scoping rules are turned off
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """Where resources refer to a versioned resource by name, under `name_key` of the map at `path`."""

    path: Path
    resource_matchers: tuple[Matcher, ...]
    name_key: str = "name"


@dataclass(frozen=True, slots=True)
class TemplateRule:
    resource_matchers: tuple[Matcher, ...]  # the versioned resources
    object_references: tuple[ObjectReference, ...]


@dataclass(frozen=True, slots=True)
class ConditionMatcher:
    type: str
    status: str
    failure: bool = False
    success: bool = False
    supports_observed_generation: bool = False
    unblock_changes: bool = False


@dataclass(frozen=True, slots=True)
class WaitRule:
    supports_observed_generation: bool
    condition_matchers: tuple[ConditionMatcher, ...]
    resource_matchers: tuple[Matcher, ...]
    ytt_resource_star: str | None = None  # ytt.funcContractV1."resource.star": defines is_done()


@dataclass(frozen=True, slots=True)
class ChangeGroupBinding:
    name: str  # may hold placeholders such as {name}
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class ChangeRuleBinding:
    rules: tuple[str, ...]
    ignore_if_cyclical: bool
    resource_matchers: tuple[Matcher, ...]


@dataclass(frozen=True, slots=True)
class PreflightRule:
    name: PreflightCheck
    config: dict[str, Any] | None = None  # accepted but unused, like kapp


@dataclass(frozen=True, slots=True)
class Config:
    minimum_required_version: str = ""
    rebase_rules: tuple[RebaseRule | YttRebaseRule, ...] = ()
    ownership_label_rules: tuple[PathRule, ...] = ()
    label_scoping_rules: tuple[LabelScopingRule, ...] = ()
    template_rules: tuple[TemplateRule, ...] = ()
    diff_against_last_applied_field_exclusion_rules: tuple[PathRule, ...] = ()
    diff_against_existing_field_exclusion_rules: tuple[PathRule, ...] = ()
    diff_mask_rules: tuple[PathRule, ...] = ()
    wait_rules: tuple[WaitRule, ...] = ()
    change_group_bindings: tuple[ChangeGroupBinding, ...] = ()
    change_rule_bindings: tuple[ChangeRuleBinding, ...] = ()
    additional_labels: dict[str, str] = field(default_factory=dict)
    preflight_rules: tuple[PreflightRule, ...] = ()


_CONFIG_FIELDS = (
    "apiVersion",
    "kind",
    "metadata",  # accepted and ignored: a Config looks like any Kubernetes resource
    "minimumRequiredVersion",
    "rebaseRules",
    "ownershipLabelRules",
    "labelScopingRules",
    "templateRules",
    "diffAgainstLastAppliedFieldExclusionRules",
    "diffAgainstExistingFieldExclusionRules",
    "diffMaskRules",
    "waitRules",
    "changeGroupBindings",
    "changeRuleBindings",
    "additionalLabels",
    "preflightRules",
)


def parse_config(doc: dict[str, Any], origin: str) -> Config:
    """The Config in `doc`; `origin` names where it came from in error messages."""
    if doc.get("apiVersion") != CONFIG_API_VERSION:
        api_version = doc.get("apiVersion")
        raise ConfigError(
            f"Expected kapp config to have apiVersion '{CONFIG_API_VERSION}', but was '{api_version}' ({origin})"
        )
    if doc.get("kind") != CONFIG_KIND:
        raise ConfigError(f"Expected kapp config to have kind '{CONFIG_KIND}', but was '{doc.get('kind')}' ({origin})")
    decoder = Decoder(origin)
    fields = decoder.fields(doc, "", _CONFIG_FIELDS)

    def rules(key: str, parse: Callable[[Any, Decoder, str], Any]) -> tuple[Any, ...]:
        items = decoder.items(fields.get(key), key)
        return tuple(parse(item, decoder, f"{key}[{i}]") for i, item in enumerate(items))

    version = decoder.string(fields.get("minimumRequiredVersion"), "minimumRequiredVersion")
    _check_minimum_version(version, origin)
    preflight_rules = rules("preflightRules", _preflight_rule)
    _check_unique_preflight_names(preflight_rules, origin)
    rebase_items = decoder.items(fields.get("rebaseRules"), "rebaseRules")
    return Config(
        minimum_required_version=version,
        rebase_rules=tuple(_rebase_rule(item, decoder, i) for i, item in enumerate(rebase_items)),
        ownership_label_rules=rules("ownershipLabelRules", _path_rule),
        label_scoping_rules=rules("labelScopingRules", _label_scoping_rule),
        template_rules=rules("templateRules", _template_rule),
        diff_against_last_applied_field_exclusion_rules=rules(
            "diffAgainstLastAppliedFieldExclusionRules", _field_exclusion_rule
        ),
        diff_against_existing_field_exclusion_rules=rules(
            "diffAgainstExistingFieldExclusionRules", _field_exclusion_rule
        ),
        diff_mask_rules=rules("diffMaskRules", _path_rule),
        wait_rules=rules("waitRules", _wait_rule),
        change_group_bindings=rules("changeGroupBindings", _change_group_binding),
        change_rule_bindings=rules("changeRuleBindings", _change_rule_binding),
        additional_labels=decoder.string_map(fields.get("additionalLabels"), "additionalLabels"),
        preflight_rules=preflight_rules,
    )


def merge(configs: Iterable[Config]) -> Config:
    """One Config with the rules of all, in order (the default config first), later additionalLabels winning.

    The result has no minimumRequiredVersion: each config was checked when parsed."""
    configs = list(configs)

    def joined(name: str) -> tuple[Any, ...]:
        return tuple(rule for config in configs for rule in getattr(config, name))

    preflight_rules = joined("preflight_rules")
    _check_unique_preflight_names(preflight_rules)
    return Config(
        rebase_rules=joined("rebase_rules"),
        ownership_label_rules=joined("ownership_label_rules"),
        label_scoping_rules=joined("label_scoping_rules"),
        template_rules=joined("template_rules"),
        diff_against_last_applied_field_exclusion_rules=joined("diff_against_last_applied_field_exclusion_rules"),
        diff_against_existing_field_exclusion_rules=joined("diff_against_existing_field_exclusion_rules"),
        diff_mask_rules=joined("diff_mask_rules"),
        wait_rules=joined("wait_rules"),
        change_group_bindings=joined("change_group_bindings"),
        change_rule_bindings=joined("change_rule_bindings"),
        additional_labels={k: v for config in configs for k, v in config.additional_labels.items()},
        preflight_rules=preflight_rules,
    )


def _rebase_rule(value: Any, decoder: Decoder, index: int) -> RebaseRule | YttRebaseRule:
    where = f"rebaseRules[{index}]"
    fields = decoder.fields(value, where, ("path", "paths", "type", "sources", "resourceMatchers", "ytt"))
    matchers = parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers")

    def invalid(message: str) -> ConfigError:
        return ConfigError(f"Validating config {decoder.origin}: Validating rebase rule {index}: {message}")

    if "ytt" in fields:
        if fields.keys() - {"ytt", "resourceMatchers"}:
            raise invalid("Expected only resourceMatchers specified with ytt configuration")
        ytt = decoder.fields(fields["ytt"], f"{where}.ytt", ("overlayContractV1",))
        if "overlayContractV1" not in ytt:
            decoder.fail(f"{where}.ytt", "expected overlayContractV1")
        contract_where = f"{where}.ytt.overlayContractV1"
        contract = decoder.fields(ytt["overlayContractV1"], contract_where, ("overlay.yml",))
        text = decoder.string(contract.get("overlay.yml"), f"{contract_where}.overlay.yml")
        return YttRebaseRule(overlay=recognise_overlay(text), resource_matchers=matchers)

    # An empty path counts as none, as in kapp.
    path = parse_path(fields.get("path"), decoder, f"{where}.path", allow_regex=True, required=False)
    paths = tuple(
        parse_path(item, decoder, f"{where}.paths[{i}]", allow_regex=True)
        for i, item in enumerate(decoder.items(fields.get("paths"), f"{where}.paths"))
    )
    if path and paths:
        raise invalid("Expected only one of path or paths specified")
    if not path and not paths:
        raise invalid("Expected either path or paths to be specified")
    type_name = decoder.string(fields.get("type"), f"{where}.type")
    try:
        rule_type = RebaseType(type_name)
    except ValueError:
        raise invalid(f"Unknown rebase rule type: {type_name} (supported: copy, remove)") from None
    all_paths = paths or (path,)
    sources = []
    for i, name in enumerate(decoder.strings(fields.get("sources"), f"{where}.sources")):
        try:
            sources.append(Source(name))
        except ValueError:
            decoder.fail(f"{where}.sources[{i}]", f"unknown source '{name}' (supported: new, existing)")
    return RebaseRule(type=rule_type, paths=all_paths, sources=tuple(sources), resource_matchers=matchers)


def _path_rule(value: Any, decoder: Decoder, where: str, *, allow_regex: bool = False) -> PathRule:
    fields = decoder.fields(value, where, ("path", "resourceMatchers"))
    return PathRule(
        path=parse_path(fields.get("path"), decoder, f"{where}.path", allow_regex=allow_regex),
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
    )


def _field_exclusion_rule(value: Any, decoder: Decoder, where: str) -> PathRule:
    """A diff field exclusion rule: kapp removes its path with the remove rebase rules' FieldRemoveMod, regex parts
    included."""
    return _path_rule(value, decoder, where, allow_regex=True)


def _label_scoping_rule(value: Any, decoder: Decoder, where: str) -> LabelScopingRule:
    fields = decoder.fields(value, where, ("path", "isDefault", "resourceMatchers"))
    return LabelScopingRule(
        path=parse_path(fields.get("path"), decoder, f"{where}.path"),
        is_default=decoder.boolean(fields.get("isDefault"), f"{where}.isDefault"),
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
    )


def _template_rule(value: Any, decoder: Decoder, where: str) -> TemplateRule:
    fields = decoder.fields(value, where, ("resourceMatchers", "affectedResources"))
    affected_where = f"{where}.affectedResources"
    affected = decoder.fields(fields.get("affectedResources"), affected_where, ("objectReferences",))
    refs_where = f"{affected_where}.objectReferences"
    references = []
    for i, item in enumerate(decoder.items(affected.get("objectReferences"), refs_where)):
        ref_where = f"{refs_where}[{i}]"
        ref = decoder.fields(item, ref_where, ("path", "resourceMatchers", "nameKey"))
        references.append(
            ObjectReference(
                path=parse_path(ref.get("path"), decoder, f"{ref_where}.path"),
                resource_matchers=parse_matchers(ref.get("resourceMatchers"), decoder, f"{ref_where}.resourceMatchers"),
                name_key=decoder.string(ref.get("nameKey"), f"{ref_where}.nameKey") or "name",
            )
        )
    return TemplateRule(
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
        object_references=tuple(references),
    )


def _wait_rule(value: Any, decoder: Decoder, where: str) -> WaitRule:
    fields = decoder.fields(
        value, where, ("supportsObservedGeneration", "conditionMatchers", "resourceMatchers", "ytt")
    )
    conditions = []
    conditions_where = f"{where}.conditionMatchers"
    for i, item in enumerate(decoder.items(fields.get("conditionMatchers"), conditions_where)):
        cond_where = f"{conditions_where}[{i}]"
        cond = decoder.fields(
            item,
            cond_where,
            ("type", "status", "failure", "success", "supportsObservedGeneration", "unblockChanges"),
        )
        conditions.append(
            ConditionMatcher(
                type=decoder.string(cond.get("type"), f"{cond_where}.type"),
                status=decoder.string(cond.get("status"), f"{cond_where}.status"),
                failure=decoder.boolean(cond.get("failure"), f"{cond_where}.failure"),
                success=decoder.boolean(cond.get("success"), f"{cond_where}.success"),
                supports_observed_generation=decoder.boolean(
                    cond.get("supportsObservedGeneration"), f"{cond_where}.supportsObservedGeneration"
                ),
                unblock_changes=decoder.boolean(cond.get("unblockChanges"), f"{cond_where}.unblockChanges"),
            )
        )
    resource_star = None
    if "ytt" in fields:
        ytt = decoder.fields(fields["ytt"], f"{where}.ytt", ("funcContractV1",))
        contract_where = f"{where}.ytt.funcContractV1"
        contract = decoder.fields(ytt.get("funcContractV1"), contract_where, ("resource.star",))
        resource_star = decoder.string(contract.get("resource.star"), f"{contract_where}.resource.star")
    return WaitRule(
        supports_observed_generation=decoder.boolean(
            fields.get("supportsObservedGeneration"), f"{where}.supportsObservedGeneration"
        ),
        condition_matchers=tuple(conditions),
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
        ytt_resource_star=resource_star,
    )


def _change_group_binding(value: Any, decoder: Decoder, where: str) -> ChangeGroupBinding:
    fields = decoder.fields(value, where, ("name", "resourceMatchers"))
    return ChangeGroupBinding(
        name=decoder.string(fields.get("name"), f"{where}.name"),
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
    )


def _change_rule_binding(value: Any, decoder: Decoder, where: str) -> ChangeRuleBinding:
    fields = decoder.fields(value, where, ("rules", "ignoreIfCyclical", "resourceMatchers"))
    return ChangeRuleBinding(
        rules=decoder.strings(fields.get("rules"), f"{where}.rules"),
        ignore_if_cyclical=decoder.boolean(fields.get("ignoreIfCyclical"), f"{where}.ignoreIfCyclical"),
        resource_matchers=parse_matchers(fields.get("resourceMatchers"), decoder, f"{where}.resourceMatchers"),
    )


def _preflight_rule(value: Any, decoder: Decoder, where: str) -> PreflightRule:
    fields = decoder.fields(value, where, ("name", "config"))
    name = decoder.string(fields.get("name"), f"{where}.name")
    try:
        check = PreflightCheck(name)
    except ValueError:
        known = ", ".join(PreflightCheck)
        decoder.fail(f"{where}.name", f"unknown preflight check '{name}' (known: {known})")
    config = fields.get("config")
    if config is not None and not isinstance(config, dict):
        decoder.fail(f"{where}.config", "expected a map")
    return PreflightRule(name=check, config=config)


def _check_unique_preflight_names(rules: tuple[PreflightRule, ...], origin: str = "") -> None:
    seen: set[PreflightCheck] = set()
    for rule in rules:
        if rule.name in seen:
            where = f" ({origin})" if origin else ""
            raise ConfigError(f"Preflight check '{rule.name}' is configured more than once in preflightRules{where}")
        seen.add(rule.name)


_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:-[0-9A-Za-z.~-]+)?(?:\+[0-9A-Za-z.~-]+)?")


def _release_segments(version: str) -> list[tuple[int, str]]:
    """Dotted numbers as keys that compare like the numbers, however many digits they have (Python refuses to
    convert more than 4,300)."""
    return [(len(part.lstrip("0")), part.lstrip("0")) for part in version.split(".")]


def _check_minimum_version(version: str, origin: str) -> None:
    if not version:
        return
    if version.startswith("v"):
        raise ConfigError(
            f"Validating config {origin}: Validating minimum version: Must not have prefix 'v' (e.g. '0.8.0')"
        )
    match = _VERSION.fullmatch(version)
    if match is None:
        raise ConfigError(
            f"Validating config {origin}: Parsing minimum version constraint: Malformed constraint: >={version}"
        )
    # Release segments only: a pre-release of the compat version is met by the release itself.
    required, compat = _release_segments(match.group(1)), _release_segments(KAPP_COMPAT_VERSION)
    width = max(len(required), len(compat))
    if required + [(0, "")] * (width - len(required)) > compat + [(0, "")] * (width - len(compat)):
        raise ConfigError(
            f"Validating config {origin}: kapp version '{KAPP_COMPAT_VERSION}' "
            f"does not meet the minimum required version '{version}'"
        )
