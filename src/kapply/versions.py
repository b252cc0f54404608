"""Package versions as kapp-controller reads, compares and selects them.

kapp-controller parses versions with carvel's semver (`github.com/k14s/semver/v4` at 266d47ac, a fork of
`blang/semver` v4) and selects them with vendir's `versions` package; this module is both, with their error messages
(docs/packages.md, "Version selection"). What differs from SemVer 2.0 is kept on purpose, since users moving from
kapp-controller expect it:

- Build metadata takes part in comparison, after the prerelease and by the same identifier rules, but with no build
  metadata lowest: `1.0.0 < 1.0.0+1 < 1.0.0+2 < 1.0.0+a`. So equality compares it too: the constraint `0.0.0` does
  not select `0.0.0+build.1` (kapp-controller#1338, open).
- Ranges are blang's: `<`, `<=`, `>`, `>=`, `=`/`==`/bare, `!`/`!=`; AND by space, OR by `||`; no `~`, `^` or
  hyphen ranges; wildcards `1.x`, `1.2.x` expanded textually, with their quirks (`!=1.2.x` matches nothing, `1.x.x`
  behaves as `1.0.x`, any comparator containing an `x` takes the wildcard path).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from kapply.errors import KapplyError


class SemverError(KapplyError):
    """A version or a range that carvel's semver cannot parse (its message)."""


class SelectionError(KapplyError):
    """No version can be selected: the message is the one kapp-controller reports on the PackageInstall."""


_DIGITS = frozenset(string.digits)
_ALPHANUMERIC = frozenset(string.ascii_letters + string.digits + "-")
_UINT64_MAX = 2**64 - 1


def _go_quote(text: str) -> str:
    """Go's `%q` (strconv.Quote): printable characters as they are, the rest escaped."""
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in escapes:
            out.append(escapes[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def _parse_uint(text: str) -> int:
    """strconv.ParseUint(text, 10, 64)."""
    if not text or not set(text) <= _DIGITS:
        raise ValueError(f"strconv.ParseUint: parsing {_go_quote(text)}: invalid syntax")
    value = int(text)
    if value > _UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {_go_quote(text)}: value out of range")
    return value


@dataclass(frozen=True, slots=True)
class Identifier:
    """One dot-separated part of a prerelease or of build metadata."""

    text: str
    number: int | None  # the value of an all-digit identifier; None for an alphanumeric one

    @property
    def sort_key(self) -> tuple[int, int | str]:
        """Numeric identifiers sort before alphanumeric ones, numbers by value, the others by their bytes."""
        return (0, self.number) if self.number is not None else (1, self.text)


@functools.total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Version:
    """A parsed version. Equal, lower and higher as carvel's semver compares: build metadata included, numbers by value
    (so `1.0.0+01` equals `1.0.0+1`)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[Identifier, ...] = ()
    build: tuple[Identifier, ...] = ()

    @property
    def sort_key(self) -> tuple[object, ...]:
        # A version without prerelease is above every prerelease of it; one without build metadata is below every build.
        prerelease = (0, tuple(i.sort_key for i in self.prerelease)) if self.prerelease else (1,)
        build = (1, tuple(i.sort_key for i in self.build)) if self.build else (0,)
        return (self.major, self.minor, self.patch, prerelease, build)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.sort_key == other.sort_key

    def __lt__(self, other: Version) -> bool:
        return self.sort_key < other.sort_key

    def __hash__(self) -> int:
        return hash(self.sort_key)


def _number(text: str, which: str) -> int:
    if not set(text) <= _DIGITS:
        raise SemverError(f"Invalid character(s) found in {which} number {_go_quote(text)}")
    if len(text) > 1 and text.startswith("0"):
        raise SemverError(f"{which.capitalize()} number must not contain leading zeroes {_go_quote(text)}")
    try:
        return _parse_uint(text)
    except ValueError as e:
        raise SemverError(str(e)) from None


def _identifier(text: str, kind: str) -> Identifier:
    """A prerelease (`kind` PreRelease) or build metadata (`kind` BuildMeta) identifier."""
    if not text:
        raise SemverError(f"{kind} is empty")
    if set(text) <= _DIGITS:
        try:
            number = _parse_uint(text)
        except ValueError as e:
            raise SemverError(f"Invalid numeric {kind} {_go_quote(text)}: {e}") from None
        if kind == "PreRelease" and len(text) > 1 and text.startswith("0"):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(text)}")
        return Identifier(text, number)
    if not set(text) <= _ALPHANUMERIC:
        raise SemverError(f"Invalid character(s) found in {kind} {_go_quote(text)}")
    return Identifier(text, None)


def parse_version(text: str) -> Version:
    """A strict version, `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]` (no leading `v`), or SemverError with the first
    problem found, as semver.Parse reports it."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    patch_text, plus, build_text = parts[2].partition("+")
    patch_text, dash, prerelease_text = patch_text.partition("-")
    patch = _number(patch_text, "patch")
    prerelease = tuple(_identifier(p, "PreRelease") for p in prerelease_text.split(".")) if dash else ()
    build = tuple(_identifier(p, "BuildMeta") for p in build_text.split(".")) if plus else ()
    return Version(major, minor, patch, prerelease, build)


def parse_relaxed(text: str) -> Version:
    """A version as vendir reads candidates: one leading `v` is dropped (`v1.2.3`), the rest is strict."""
    return parse_version(text.removeprefix("v"))


class Operator(StrEnum):
    EQ = "="
    NE = "!="
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="


_OPERATORS = {
    "": Operator.EQ,
    "=": Operator.EQ,
    "==": Operator.EQ,
    "!": Operator.NE,
    "!=": Operator.NE,
    ">": Operator.GT,
    ">=": Operator.GE,
    "<": Operator.LT,
    "<=": Operator.LE,
}


@dataclass(frozen=True, slots=True)
class Comparator:
    operator: Operator
    version: Version

    def matches(self, version: Version) -> bool:
        match self.operator:
            case Operator.EQ:
                return version == self.version
            case Operator.NE:
                return version != self.version
            case Operator.GT:
                return version > self.version
            case Operator.GE:
                return version >= self.version
            case Operator.LT:
                return version < self.version
            case Operator.LE:
                return version <= self.version


@dataclass(frozen=True, slots=True)
class Range:
    """A parsed constraint: any of `alternatives` (`||`), each all of its comparators (space-separated)."""

    text: str
    alternatives: tuple[tuple[Comparator, ...], ...]

    def contains(self, version: Version) -> bool:
        # An empty alternative (`a || || b`) makes kapp-controller's range function call a nil function, a panic, when
        # the alternatives before it fail; here it matches nothing.
        return any(group and all(c.matches(version) for c in group) for group in self.alternatives)


# unicode.IsSpace, which strings.TrimSpace trims.
_GO_SPACES = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def _split_and_trim(text: str) -> list[str]:
    """blang's splitAndTrim, byte for byte: split at spaces except right after `>`, `<` or `=` (so `>= 1.0.0` is one
    part), then drop the spaces inside each part. A one-byte part followed by a space, or ending the text, is dropped
    (sic)."""
    data = text.encode()
    parts = []
    last = 0
    last_char = 0
    for i, byte in enumerate(data):
        if byte == 0x20 and last_char not in b"><=":
            if last < i - 1:
                parts.append(data[last:i])
            last = i + 1
        elif byte != 0x20:
            last_char = byte
    if last < len(data) - 1:
        parts.append(data[last:])
    return [part.replace(b" ", b"").decode() for part in parts]


def _split_or_parts(parts: list[str]) -> list[list[str]]:
    groups = []
    last = 0
    for i, part in enumerate(parts):
        if part == "||":
            if i == 0:
                raise SemverError("First element in range is '||'")
            groups.append(parts[last:i])
            last = i + 1
    if last == len(parts):
        raise SemverError("Last element in range is '||'")
    groups.append(parts[last:])
    return groups


def _split_comparator_version(part: str) -> tuple[str, str]:
    """The operator (before the first decimal digit, trimmed) and the version (from it on)."""
    for i, char in enumerate(part):
        if char.isdecimal():
            return part[:i].strip(_GO_SPACES), part[i:]
    raise SemverError(f"Could not get version from string: {_go_quote(part)}")


class _Wildcard(IntEnum):
    NONE = 0
    MAJOR = 1
    MINOR = 2
    PATCH = 3


def _wildcard(version: str) -> _Wildcard:
    """By the number of dot-separated parts, when the last is `x`: `1.x` MINOR, `1.2.x` and `1.x.x` PATCH."""
    parts = version.split(".")
    if parts[-1] == "x" and len(parts) <= 3:
        return _Wildcard(len(parts))
    return _Wildcard.NONE


def _flatten_wildcard(version: str) -> str:
    """The first `.x` (after folding `.x.x`) becomes `.0`; a two-part result gets `.0` appended."""
    flat = version.replace(".x.x", ".x", 1).replace(".x", ".0", 1)
    return flat + ".0" if len(flat.split(".")) == 2 else flat


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _increment(version: str, index: int) -> str:
    """blang's incrementMajorVersion (index 0) and incrementMinorVersion (1): "" when that part is not a Go int."""
    parts = version.split(".")
    if not _GO_INT.fullmatch(parts[index]) or not -(2**63) <= int(parts[index]) < 2**63:
        return ""
    parts[index] = str((int(parts[index]) + 1 + 2**63) % 2**64 - 2**63)  # Go's int wraps around
    return ".".join(parts)


def _expand_wildcards(groups: list[list[str]]) -> list[list[str]]:
    """blang's expandWildcardVersion: every comparator containing an `x` is rewritten."""
    expanded = []
    for group in groups:
        new_group = []
        for part in group:
            if "x" in part:
                operator, version = _split_comparator_version(part)
                wildcard = _wildcard(version)
                flat = _flatten_wildcard(version)
                result_operator, increment = "", False
                match operator:
                    case ">":
                        result_operator, increment = ">=", True
                    case ">=":
                        result_operator = ">="
                    case "<":
                        result_operator = "<"
                    case "<=":
                        result_operator, increment = "<", True
                    case "" | "=" | "==":
                        new_group.append(">=" + flat)
                        result_operator, increment = "<", True
                    case "!=" | "!":
                        new_group.append("<" + flat)
                        result_operator, increment = ">=", True
                if not increment:
                    result_version = flat  # an unknown operator is dropped with it (sic)
                elif wildcard == _Wildcard.PATCH:
                    result_version = _increment(flat, 1)
                elif wildcard == _Wildcard.MINOR:
                    result_version = _increment(flat, 0)
                else:
                    result_version = ""
                part = result_operator + result_version
            new_group.append(part)
        expanded.append(new_group)
    return expanded


def _comparator(part: str) -> Comparator:
    operator_text, version_text = _split_comparator_version(part)
    where = f"Could not parse Range {_go_quote(part)}"
    written = _go_quote(operator_text + version_text)
    operator = _OPERATORS.get(operator_text)
    if operator is None:
        raise SemverError(f"{where}: Could not parse comparator {_go_quote(operator_text)} in {written}")
    try:
        version = parse_version(version_text)
    except SemverError as e:
        raise SemverError(f"{where}: Could not parse version {_go_quote(version_text)} in {written}: {e}") from None
    return Comparator(operator, version)


def parse_range(text: str) -> Range:
    """A constraint such as `>=1.0.0 <2.0.0 || 3.x`, or SemverError with semver.ParseRange's message."""
    groups = _expand_wildcards(_split_or_parts(_split_and_trim(text)))
    return Range(text, tuple(tuple(_comparator(part) for part in group) for group in groups))


@dataclass(frozen=True, slots=True)
class Prereleases:
    """`versionSelection.prereleases`: which prereleases may be selected. No identifiers: all of them; otherwise those
    with an identifier equal to one of these (`rc` admits `1.0.0-rc.1`, not `1.0.0-rc1`)."""

    identifiers: tuple[str, ...] = ()

    def admits(self, version: Version) -> bool:
        if not version.prerelease or not self.identifiers:
            return True
        return any(part.text in self.identifiers for part in version.prerelease)


@dataclass(frozen=True, slots=True)
class VersionSelection:
    """`versionSelection` of a PackageInstall (vendir's `semver` selection)."""

    constraints: str = ""  # a range; empty: any version
    prereleases: Prereleases | None = None  # None: no prerelease is selected


def with_single_prerelease_rule(selection: VersionSelection) -> VersionSelection:
    """kapp-controller's convenience for PackageInstalls: constraints that are one strict version with a prerelease
    (`3.0.0-rc.1`), and no `prereleases`, admit prereleases, so that version can be selected."""
    if not selection.constraints or selection.prereleases is not None:
        return selection
    try:
        version = parse_version(selection.constraints)
    except SemverError:
        return selection
    return VersionSelection(selection.constraints, Prereleases()) if version.prerelease else selection


# Names of the checks a PackageInstall's selection runs besides its own (the `after-<name>=N` steps of the message).
KUBERNETES_VERSION_CHECK = "kubernetes-version-check"
KAPP_CONTROLLER_VERSION_CHECK = "kapp-controller-version-check"


@dataclass(frozen=True, slots=True)
class VersionCheck:
    """A filter applied after the prerelease filter and before the constraints, reported by its name."""

    name: str
    accepts: Callable[[str], bool]  # given the version as written


@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str
    version: Version


def _parsable(texts: Iterable[str]) -> list[_Candidate]:
    candidates = []
    for text in texts:
        try:
            candidates.append(_Candidate(text, parse_relaxed(text)))
        except SemverError:
            continue  # unparsable versions are dropped silently, as vendir does
    return candidates


def select_version(candidates: Iterable[str], selection: VersionSelection, checks: Sequence[VersionCheck] = ()) -> str:
    """The highest of `candidates` (versions as written) that `selection` and `checks` admit, as written; on a tie
    (`v1.0.0` and `1.0.0`), the later one. SelectionError otherwise, with vendir's message and the count after each
    step: `Expected to find at least one version, but did not (details: all=3 -> after-prereleases-filter=2 ->
    after-constraints-filter=0)`."""
    remaining = _parsable(candidates)
    details = [f"all={len(remaining)}"]
    prereleases = selection.prereleases
    remaining = [c for c in remaining if (prereleases.admits(c.version) if prereleases else not c.version.prerelease)]
    details.append(f"after-prereleases-filter={len(remaining)}")
    for check in checks:
        remaining = [c for c in remaining if check.accepts(c.text)]
        details.append(f"after-{check.name}={len(remaining)}")
    if selection.constraints:
        try:
            constraints = parse_range(selection.constraints)
        except SemverError as e:
            raise SelectionError(
                f"Selecting versions: Parsing version constraint '{selection.constraints}': {e}"
            ) from None
        remaining = [c for c in remaining if constraints.contains(c.version)]
        details.append(f"after-constraints-filter={len(remaining)}")
    if not remaining:
        raise SelectionError(f"Expected to find at least one version, but did not (details: {' -> '.join(details)})")
    highest = remaining[0]
    for candidate in remaining[1:]:
        if candidate.version >= highest.version:
            highest = candidate
    return highest.text


def selection_admits(version: str, selection: VersionSelection) -> bool:
    """Whether `selection` alone (its prerelease filter and constraints, without the single-prerelease rule or other
    checks) admits `version`: kapp-controller's test for which PackageInstalls a new or changed Package concerns."""
    try:
        select_version([version], selection)
    except SelectionError:
        return False
    return True


def downgrade_refusal(selected: str, last_attempted: str) -> str | None:
    """What kapp-controller writes as usefulErrorMessage when the version it selected is below
    `status.lastAttemptedVersion` (the PackageInstall then fails with SEE_USEFUL_ERROR_MESSAGE, without retrying, and
    its App is left as it is); None when it may proceed. The caller skips the check for a PackageInstall with the
    downgradable annotation. The comparison is `selected` against the range `>=<last attempted>`, build metadata
    included; SelectionError when that range does not parse."""
    if not last_attempted:
        return None
    floor = ">=" + last_attempted
    try:
        allowed = parse_range(floor)
    except SemverError as e:
        raise SelectionError(
            f"Filtering by last attempted version '{last_attempted}': Parsing version constraint '{floor}': {e}"
        ) from None
    if any(allowed.contains(c.version) for c in _parsable([selected])):
        return None
    return (
        f"Stopped installing matched version '{selected}' since last attempted version '{last_attempted}' is higher.\n"
        'hint: Add annotation packaging.carvel.dev/downgradable: "" to PackageInstall to proceed with downgrade'
    )
