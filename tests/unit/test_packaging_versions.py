"""Version parsing, comparison, ranges and selection as kapp-controller does them (carvel's semver, vendir's
selection): every example of shared/reference/kapp-controller-packages.md section 4, carvel-dev/semver's and vendir's
own test cases, and the quirks users moving from kapp-controller rely on, with the messages verbatim."""

from __future__ import annotations

import pytest

from kapply.versions import (
    KAPP_CONTROLLER_VERSION_CHECK,
    KUBERNETES_VERSION_CHECK,
    Prereleases,
    SelectionError,
    SemverError,
    VersionCheck,
    VersionSelection,
    downgrade_refusal,
    parse_range,
    parse_relaxed,
    parse_version,
    select_version,
    selection_admits,
    with_single_prerelease_rule,
)

# --- parsing ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1.2.3",
        "0.0.1",
        "0.0.1-alpha.preview+123.456",
        "1.2.3-alpha.1+123.456",
        "1.2.3-alpha.b-eta+123.b-uild",
        "1.2.3+123.b-uild",
        "1.0.0-RC.1",
        "1.0.0--",
        "1.0.0+01",  # leading zeroes are allowed in build metadata
        "18446744073709551615.0.0",  # the largest uint64
        "0.0.0+build.1700000000",  # kctrl's default release version
    ],
)
def test_strict_parse_accepts_semver_2(text: str):
    parse_version(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1.0", "No Major.Minor.Patch elements found"),
        (".", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        ("a.b.c", 'Invalid character(s) found in major number "a"'),
        ("-1.1.1", 'Invalid character(s) found in major number "-1"'),
        ("1.a.1", 'Invalid character(s) found in minor number "a"'),
        ("1.1.a", 'Invalid character(s) found in patch number "a"'),
        ("1.0.1.rc1", 'Invalid character(s) found in patch number "1.rc1"'),
        ("1..1", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.1.", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.1.+123", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.1.-beta", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("01.1.1", 'Major number must not contain leading zeroes "01"'),
        ("1.001.1", 'Minor number must not contain leading zeroes "001"'),
        ("1.1.01", 'Patch number must not contain leading zeroes "01"'),
        ("20000000000000000000.1.1", 'strconv.ParseUint: parsing "20000000000000000000": value out of range'),
        ("1.1.20000000000000000000", 'strconv.ParseUint: parsing "20000000000000000000": value out of range'),
        (
            "1.1.1-20000000000000000000",
            'Invalid numeric PreRelease "20000000000000000000": '
            'strconv.ParseUint: parsing "20000000000000000000": value out of range',
        ),
        ("1.1.1-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.1.1-beta.001", 'Numeric PreRelease version must not contain leading zeroes "001"'),
        ("0.0.0-!", 'Invalid character(s) found in PreRelease "!"'),
        ("0.0.0+!", 'Invalid character(s) found in BuildMeta "!"'),
        ("0.0.0-.alpha", "PreRelease is empty"),
        ("0.0.0-alpha+", "BuildMeta is empty"),
        ("0.0.0-alpha+test.", "BuildMeta is empty"),
        ('1.0.0-"', 'Invalid character(s) found in PreRelease "\\""'),
    ],
)
def test_strict_parse_reports_the_first_problem_as_carvel_semver_does(text: str, message: str):
    with pytest.raises(SemverError) as e:
        parse_version(text)
    assert str(e.value) == message


def test_relaxed_parse_drops_one_leading_v_only():
    assert parse_relaxed("v1.2.3") == parse_version("1.2.3")
    for text in ("vv1.2.3", "V1.2.3", "1.2"):
        with pytest.raises(SemverError):
            parse_relaxed(text)


# --- comparison -------------------------------------------------------------------------------------------------------


def test_versions_order_by_semver_precedence_then_build_metadata():
    ascending = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.0+1",
        "1.0.0+1.2",
        "1.0.0+2",
        "1.0.0+a",
        "1.0.0+a.1",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    parsed = [parse_version(v) for v in ascending]
    assert sorted(reversed(parsed)) == parsed
    for lower, higher in zip(parsed, parsed[1:], strict=False):
        assert lower < higher and higher > lower and lower != higher


def test_build_metadata_sorts_as_vendir_sorts_it():
    written = ["1.0.0", "1.0.0+1", "1.0.0+2", "1.0.0+ab1", "1.0.0+z1", "1.0.0+ab1.foo", "1.0.0-pre+foo", "1.1.0"]
    ordered = sorted(written, key=parse_version)
    assert ordered == [
        "1.0.0-pre+foo",
        "1.0.0",
        "1.0.0+1",
        "1.0.0+2",
        "1.0.0+ab1",
        "1.0.0+ab1.foo",
        "1.0.0+z1",
        "1.1.0",
    ]


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.0.0-2+2", "1.0.0-3+1"),  # the prerelease decides before the build metadata
        ("1.0.0-rc.9", "1.0.0-rc.10"),  # numeric identifiers by value
        ("1.0.0-rc10", "1.0.0-rc9"),  # alphanumeric identifiers by their bytes
        ("1.0.0-Z", "1.0.0-a"),  # upper case before lower case
        ("1.0.0-1", "1.0.0-a"),  # numeric before alphanumeric
        ("1.0.0+1", "1.0.0+a"),
        ("1.0.0+1.2", "1.0.0+1.2.3"),  # a longer list is higher when it starts the same
    ],
)
def test_identifiers_compare_numerically_then_by_bytes(lower: str, higher: str):
    assert parse_version(lower) < parse_version(higher)


def test_numbers_in_build_metadata_compare_by_value():
    assert parse_version("1.0.0+01") == parse_version("1.0.0+1")


# --- ranges -----------------------------------------------------------------------------------------------------------

RANGE_CASES = [
    (">1.2.3", {"1.2.2": False, "1.2.3": False, "1.2.4": True}),
    (">=1.2.3", {"1.2.3": True, "1.2.4": True, "1.2.2": False}),
    ("<1.2.3", {"1.2.2": True, "1.2.3": False, "1.2.4": False}),
    ("<=1.2.3", {"1.2.2": True, "1.2.3": True, "1.2.4": False}),
    ("1.2.3", {"1.2.2": False, "1.2.3": True, "1.2.4": False}),
    ("=1.2.3", {"1.2.2": False, "1.2.3": True, "1.2.4": False}),
    ("==1.2.3", {"1.2.2": False, "1.2.3": True, "1.2.4": False}),
    ("!=1.2.3", {"1.2.2": True, "1.2.3": False, "1.2.4": True}),
    ("!1.2.3", {"1.2.2": True, "1.2.3": False, "1.2.4": True}),
    (">= 1.0.0", {"0.9.0": False, "1.0.0": True}),  # a space after the operator
    ("  >=   1.2.3   <=  1.2.3   ", {"1.2.3": True, "1.2.4": False}),
    (">1.2.2 <1.2.4", {"1.2.2": False, "1.2.3": True, "1.2.4": False}),
    ("<1.2.2 <1.2.4", {"1.2.1": True, "1.2.2": False, "1.2.3": False}),
    (">1.2.2 <1.2.5 !=1.2.4", {"1.2.3": True, "1.2.4": False, "1.2.5": False}),
    (">1.2.2 || <1.2.4", {"1.2.2": True, "1.2.3": True, "1.2.4": True}),
    ("<1.2.2 || >1.2.4", {"1.2.2": False, "1.2.3": False, "1.2.4": False}),
    (">1.2.2 <1.2.4 || >=2.0.0", {"1.2.2": False, "1.2.3": True, "1.2.4": False, "2.0.0": True, "2.0.1": True}),
    (">1.2.2 <1.2.4 || >=2.0.0 <3.0.0", {"1.2.3": True, "2.9.9": True, "3.0.0": False}),
    (">1.x", {"1.9.0": False, "2.0.0": True}),
    (">1.2.x", {"1.2.6": False, "1.3.0": True}),
    ("1.3.x", {"1.2.0": False, "1.3.0": True, "1.3.9": True, "1.4.0": False}),
    ("2.x", {"1.9.9": False, "2.0.0": True, "2.9.9": True, "3.0.0": False}),
    ("1.x || >=2.0.x <2.2.x", {"0.9.2": False, "1.2.2": True, "2.0.0": True, "2.1.8": True, "2.2.0": False}),
    (">0.0.5 <5.0.0", {"0.0.1-rc.0": False, "0.1.0": True, "2.0.0-10": True, "2.0.0-10+meta.10": True}),
    (">1.0.0+ab1.foo", {"1.0.0+ab1": False, "1.0.0+z1": True, "1.0.0": False}),
]


@pytest.mark.parametrize(("constraint", "expected"), RANGE_CASES)
def test_ranges_match_as_blang_ranges_do(constraint: str, expected: dict[str, bool]):
    parsed = parse_range(constraint)
    assert {v: parsed.contains(parse_version(v)) for v in expected} == expected


@pytest.mark.parametrize(
    ("constraint", "version"),
    [("0.0.0", "0.0.0+build.1234"), ("1.5.3", "1.5.3+vmware.1"), ("1.2.3", "1.2.3+ignoreme")],
)
def test_equality_compares_build_metadata_as_kapp_controller_does(constraint: str, version: str):
    # kapp-controller#1338: a constraint naming the version without its build metadata does not select it.
    assert not parse_range(constraint).contains(parse_version(version))
    assert parse_range(f">={constraint}").contains(parse_version(version))
    assert parse_range(version).contains(parse_version(version))


def test_a_prerelease_inside_a_range_matches_it():
    assert parse_range(">=1.0.0").contains(parse_version("2.0.0-rc.1"))
    # `1.3.x` is `>=1.3.0 <1.4.0`, and 1.4.0's prereleases are below 1.4.0.
    assert parse_range("1.3.x").contains(parse_version("1.4.0-rc.1"))
    assert not parse_range("1.3.x").contains(parse_version("1.3.0-rc.1"))


@pytest.mark.parametrize(
    ("wildcard", "expansion"),
    [
        (">=1.2.x", ">=1.2.0"),
        ("<=1.2.x", "<1.3.0"),
        (">1.2.x", ">=1.3.0"),
        ("<1.2.x", "<1.2.0"),
        ("!=1.2.x", "<1.2.0 >=1.3.0"),
        ("1.2.x", ">=1.2.0 <1.3.0"),
        (">=1.x", ">=1.0.0"),
        ("<=1.x", "<2.0.0"),
        (">1.x", ">=2.0.0"),
        ("<1.x", "<1.0.0"),
        ("!=1.x", "<1.0.0 >=2.0.0"),
        ("1.x", ">=1.0.0 <2.0.0"),
        ("=1.x", ">=1.0.0 <2.0.0"),
        ("1.x.x", ">=1.0.0 <1.1.0"),  # sic: a patch wildcard by its three parts
        (">>1.x", "1.0.0"),  # sic: an unknown operator is dropped with the wildcard
    ],
)
def test_wildcards_expand_as_blang_expands_them(wildcard: str, expansion: str):
    assert parse_range(wildcard).alternatives == parse_range(expansion).alternatives


def test_a_negated_wildcard_matches_nothing():
    negated = parse_range("!=1.2.x")
    assert not any(negated.contains(parse_version(v)) for v in ("1.1.0", "1.2.5", "1.3.0", "0.0.1", "9.9.9"))


def test_a_one_byte_part_is_dropped_as_blang_drops_it():
    assert parse_range(">=1.0.0 !").alternatives == parse_range(">=1.0.0").alternatives
    assert parse_range(">=1.0.0 ! <2.0.0").alternatives == parse_range(">=1.0.0 <2.0.0").alternatives


def test_parts_are_measured_in_bytes_as_go_measures_them():
    # A two-byte character is a part of two bytes, so it is kept (and is not a comparator).
    with pytest.raises(SemverError) as e:
        parse_range("é >=1.0.0")
    assert str(e.value) == 'Could not get version from string: "é"'


def test_an_empty_alternative_matches_nothing():
    between = parse_range("1.0.0 || || 2.0.0")
    assert between.contains(parse_version("1.0.0")) and between.contains(parse_version("2.0.0"))
    assert not between.contains(parse_version("1.5.0"))


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        (">v1.5.3", 'Could not parse Range ">v1.5.3": Could not parse comparator ">v" in ">v1.5.3"'),
        (">>1.2.3", 'Could not parse Range ">>1.2.3": Could not parse comparator ">>" in ">>1.2.3"'),
        ("~1.2.3", 'Could not parse Range "~1.2.3": Could not parse comparator "~" in "~1.2.3"'),
        ("^1.2.3", 'Could not parse Range "^1.2.3": Could not parse comparator "^" in "^1.2.3"'),
        (
            "1.0",
            'Could not parse Range "1.0": Could not parse version "1.0" in "1.0": No Major.Minor.Patch elements found',
        ),
        (
            ">=v1.0.0",
            'Could not parse Range ">=v1.0.0": Could not parse comparator ">=v" in ">=v1.0.0"',
        ),
        (
            ">=1.0.01",
            'Could not parse Range ">=1.0.01": Could not parse version "1.0.01" in ">=1.0.01": '
            'Patch number must not contain leading zeroes "01"',
        ),
        ("string", 'Could not get version from string: "string"'),
        ("foox", 'Could not get version from string: "foox"'),
        ("|| 1.0.0", "First element in range is '||'"),
        ("1.0.0 ||", "Last element in range is '||'"),
        ("", "Last element in range is '||'"),
        # Any comparator with an `x` takes the wildcard path: an exact version with an x in it ends as a bare `<`.
        ("1.0.0-linux", 'Could not get version from string: "<"'),
        ("1.2.3+x.x", 'Could not get version from string: "<"'),
    ],
)
def test_unparsable_ranges_fail_with_blangs_message(constraint: str, message: str):
    with pytest.raises(SemverError) as e:
        parse_range(constraint)
    assert str(e.value) == message


def test_a_version_with_an_x_is_still_a_bound():
    assert parse_range(">=1.0.0-linux").contains(parse_version("1.0.0"))


# --- selection --------------------------------------------------------------------------------------------------------

REPOSITORY = ["2.0.0-10+meta.10", "0.0.1-pre.10", "0.0.1-pre.1", "0.1.0", "2.0.0-10", "2.0.0", "0.0.1-rc.0"]


def test_without_prereleases_no_prerelease_is_selected():
    assert select_version(REPOSITORY, VersionSelection()) == "2.0.0"
    with pytest.raises(SelectionError) as e:
        select_version(REPOSITORY, VersionSelection("<0.1.0"))
    assert str(e.value) == (
        "Expected to find at least one version, but did not "
        "(details: all=7 -> after-prereleases-filter=2 -> after-constraints-filter=0)"
    )


def test_empty_prereleases_admit_every_prerelease():
    assert select_version(REPOSITORY, VersionSelection("<0.1.0", Prereleases())) == "0.0.1-rc.0"


def test_prerelease_identifiers_admit_prereleases_with_that_exact_identifier():
    selection = VersionSelection("<1.0.0", Prereleases(("rc",)))
    assert select_version(["1.0.0-rc1", "0.9.0-rc.1", "0.9.0-beta.2"], selection) == "0.9.0-rc.1"
    assert not selection_admits("1.0.0-rc1", VersionSelection(prereleases=Prereleases(("rc",))))
    assert selection_admits("1.0.0-rc.1", VersionSelection(prereleases=Prereleases(("rc",))))
    alpha_or_rc = Prereleases(("alpha", "rc"))
    kept = [
        v
        for v in ["2.0.0-10", "0.0.1-pre.10", "0.0.1-alpha.1", "0.1.0", "0.0.1-rc.0"]
        if alpha_or_rc.admits(parse_version(v))
    ]
    assert kept == ["0.0.1-alpha.1", "0.1.0", "0.0.1-rc.0"]


def test_a_single_prerelease_version_as_constraint_admits_prereleases():
    repository = ["1.0.0", "2.0.0", "3.0.0-rc.1"]
    assert select_version(repository, with_single_prerelease_rule(VersionSelection("3.0.0-rc.1"))) == "3.0.0-rc.1"
    # Only for a single strict version, and only when prereleases are not given.
    for selection in (VersionSelection("=3.0.0-rc.1"), VersionSelection("3.0.0-rc.1", Prereleases(("beta",)))):
        with pytest.raises(SelectionError):
            select_version(repository, with_single_prerelease_rule(selection))
    assert with_single_prerelease_rule(VersionSelection("2.0.0")) == VersionSelection("2.0.0")


def test_the_highest_admitted_version_is_selected_as_written():
    assert select_version(["1.0.0", "v2.1.0", "2.0.0"], VersionSelection(">=1.0.0")) == "v2.1.0"
    assert select_version(["1.0.0", "2.0.0", "3.0.0-rc.1"], VersionSelection(">= 0.0.0", Prereleases())) == "3.0.0-rc.1"
    assert select_version(["1.0.0+build.1", "1.0.0+build.2", "1.0.0"], VersionSelection()) == "1.0.0+build.2"


def test_of_equal_versions_the_later_one_is_selected():
    assert select_version(["v2.0.0", "2.0.0"], VersionSelection()) == "2.0.0"
    assert select_version(["2.0.0", "v2.0.0"], VersionSelection()) == "v2.0.0"


def test_unparsable_candidates_are_dropped_silently():
    with pytest.raises(SelectionError) as e:
        select_version(["latest", "1.0", "1.0.0"], VersionSelection(">1.0.0"))
    assert "(details: all=1 -> after-prereleases-filter=1 -> after-constraints-filter=0)" in str(e.value)


def test_no_candidates_report_only_the_steps_that_ran():
    with pytest.raises(SelectionError) as e:
        select_version([], VersionSelection())
    assert str(e.value) == (
        "Expected to find at least one version, but did not (details: all=0 -> after-prereleases-filter=0)"
    )


def test_checks_run_between_the_prerelease_filter_and_the_constraints_and_are_reported_by_name():
    seen = []

    def kubernetes(version: str) -> bool:
        seen.append(version)
        return version != "2.0.0"

    checks = [VersionCheck(KUBERNETES_VERSION_CHECK, kubernetes), VersionCheck(KAPP_CONTROLLER_VERSION_CHECK, bool)]
    assert select_version(["1.0.0", "2.0.0", "3.0.0-rc.1"], VersionSelection("<3.0.0"), checks) == "1.0.0"
    assert seen == ["1.0.0", "2.0.0"]
    with pytest.raises(SelectionError) as e:
        select_version(["1.0.0", "2.0.0"], VersionSelection(">1.0.0"), checks)
    assert str(e.value) == (
        "Expected to find at least one version, but did not (details: all=2 -> after-prereleases-filter=2 -> "
        "after-kubernetes-version-check=1 -> after-kapp-controller-version-check=1 -> after-constraints-filter=0)"
    )


def test_an_unparsable_constraint_fails_the_selection_with_its_parser_error():
    with pytest.raises(SelectionError) as e:
        select_version(["1.5.4"], VersionSelection(">v1.5.3"))
    assert str(e.value) == (
        "Selecting versions: Parsing version constraint '>v1.5.3': "
        'Could not parse Range ">v1.5.3": Could not parse comparator ">v" in ">v1.5.3"'
    )


def test_a_package_event_concerns_installs_whose_selection_admits_its_version():
    assert selection_admits("1.2.0", VersionSelection(">=1.0.0"))
    assert not selection_admits("0.9.0", VersionSelection(">=1.0.0"))
    assert not selection_admits("1.0.0-rc.1", VersionSelection(">=0.1.0"))
    # The single-prerelease rule is the install's, not the event filter's (as in kapp-controller).
    assert not selection_admits("3.0.0-rc.1", VersionSelection("3.0.0-rc.1"))
    assert not selection_admits("1.0.0", VersionSelection(">v1"))


# --- the downgrade guard ----------------------------------------------------------------------------------------------

DOWNGRADE_HINT = (
    'hint: Add annotation packaging.carvel.dev/downgradable: "" to PackageInstall to proceed with downgrade'
)


def test_selecting_below_the_last_attempted_version_is_refused_with_kapp_controllers_message():
    assert downgrade_refusal("1.0.0", "2.0.0") == (
        "Stopped installing matched version '1.0.0' since last attempted version '2.0.0' is higher.\n" + DOWNGRADE_HINT
    )


@pytest.mark.parametrize(
    ("selected", "last_attempted"),
    [("2.0.0", "2.0.0"), ("2.1.0", "2.0.0"), ("1.0.0", ""), ("1.0.0+build.2", "1.0.0+build.1"), ("v2.0.0", "2.0.0")],
)
def test_the_same_or_a_higher_version_proceeds(selected: str, last_attempted: str):
    assert downgrade_refusal(selected, last_attempted) is None


def test_build_metadata_counts_for_the_downgrade_guard():
    assert downgrade_refusal("1.0.0", "1.0.0+build.2") is not None
    assert downgrade_refusal("1.0.0+build.1", "1.0.0+build.2") is not None


def test_an_unparsable_selected_version_is_refused():
    assert downgrade_refusal("latest", "1.0.0") is not None


def test_an_unparsable_last_attempted_version_fails_the_check():
    with pytest.raises(SelectionError) as e:
        downgrade_refusal("1.0.0", "bogus")
    assert str(e.value) == (
        "Filtering by last attempted version 'bogus': Parsing version constraint '>=bogus': "
        'Could not get version from string: ">=bogus"'
    )
