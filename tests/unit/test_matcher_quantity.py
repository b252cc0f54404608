from decimal import Decimal

import pytest

from kapply.matcher import parse_quantity


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1000m", "1"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1e3", "1k"),
        ("1E3", "1000"),
        ("1e-3", "1m"),
        ("1000n", "1u"),
        ("1000u", "1m"),
        ("1M", "1000k"),
        ("1P", "1000T"),
        ("1Ei", "1024Pi"),
        (".5", "0.5"),
        ("+1", "1"),
        (2, "2"),
        (0.25, "250m"),
        ("1Ti", "1024Gi"),
        ("1G", "1000M"),
        ("1E", "1e18"),
    ],
)
def test_quantities_that_mean_the_same_amount_are_equal(a: object, b: object) -> None:
    assert parse_quantity(a) == parse_quantity(b)


def test_binary_and_decimal_suffixes_are_different_amounts() -> None:
    assert parse_quantity("1Ki") == Decimal(1024)
    assert parse_quantity("1k") == Decimal(1000)
    assert parse_quantity("1Mi") != parse_quantity("1M")


def test_negative_quantities_keep_their_sign() -> None:
    assert parse_quantity("-100m") == Decimal("-0.1")


@pytest.mark.parametrize("value", ["", "abc", "1e", "1Qi", "1.2.3", "m", "1 Gi", True, None, [], {"a": 1}])
def test_values_that_are_not_quantities_parse_to_none(value: object) -> None:
    assert parse_quantity(value) is None
