"""kapp's Config resource: parsing, kapp's default config, and applying its rules to resources.

Pure: no I/O beyond reading the packaged default config, no cluster. Resources are plain dicts.
"""

from kapply.config.config import (
    KAPP_COMPAT_VERSION,
    ChangeGroupBinding,
    ChangeRuleBinding,
    ConditionMatcher,
    Config,
    LabelScopingRule,
    ObjectReference,
    PathRule,
    PreflightCheck,
    PreflightRule,
    RebaseRule,
    RebaseType,
    Source,
    TemplateRule,
    WaitRule,
    YttRebaseRule,
    merge,
    parse_config,
)
from kapply.config.default import default_config, default_config_yaml
from kapply.config.matchers import Matcher, matches_any
from kapply.config.paths import Path, PathPart
from kapply.config.rules import (
    MaskCounter,
    add_label_scoping,
    add_ownership_labels,
    mask,
    rebase,
    remove_fields,
)

__all__ = [
    "KAPP_COMPAT_VERSION",
    "ChangeGroupBinding",
    "ChangeRuleBinding",
    "ConditionMatcher",
    "Config",
    "LabelScopingRule",
    "MaskCounter",
    "Matcher",
    "ObjectReference",
    "Path",
    "PathPart",
    "PathRule",
    "PreflightCheck",
    "PreflightRule",
    "RebaseRule",
    "RebaseType",
    "Source",
    "TemplateRule",
    "WaitRule",
    "YttRebaseRule",
    "add_label_scoping",
    "add_ownership_labels",
    "default_config",
    "default_config_yaml",
    "mask",
    "matches_any",
    "merge",
    "parse_config",
    "rebase",
    "remove_fields",
]
