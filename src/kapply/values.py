"""Values as Go reads and writes them: kapp's flags (`strconv.ParseBool`, `ParseInt` with base prefixes,
`ParseFloat`, `time.ParseDuration`), and kapp-controller's rawOptions. Errors are Go's messages, as ValueError."""

from __future__ import annotations

import math
import re

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


_GO_INT = re.compile(r"[+-]?(0[xX](_?[0-9a-fA-F])+|0[bB](_?[01])+|0[oO]?(_?[0-7])+|[1-9](_?[0-9])*|0)")


def parse_int(text: str) -> int:
    """strconv.ParseInt(text, 0, 64): decimal, or 0x / 0o / 0 / 0b prefixed, with `_` between digits."""
    if not _GO_INT.fullmatch(text):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").replace("_", "")
    if digits[:2] in ("0x", "0X", "0b", "0B", "0o", "0O"):
        value = int(digits, 0)
    elif len(digits) > 1 and digits.startswith("0"):
        value = int(digits, 8)
    else:
        value = int(digits)
    value *= sign
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_float(text: str) -> float:
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    if math.isinf(value) and text.strip("+-").lower() not in ("inf", "infinity"):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return value


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def parse_duration(text: str) -> float:
    """time.ParseDuration, in seconds: `15m`, `1h2m3.5s`, `500ms`, `-1s`, `0`."""
    original = text
    sign = 1.0
    if text[:1] in "+-" and text:
        sign, text = (-1.0 if text[0] == "-" else 1.0), text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f'time: invalid duration "{original}"')
    total = 0.0
    while text:
        match = _DURATION_PART.match(text)
        number, unit = (match.group(1), match.group(2)) if match else ("", "")
        if not number or number == ".":
            raise ValueError(f'time: invalid duration "{original}"')
        if not unit:
            raise ValueError(f'time: missing unit in duration "{original}"')
        unit_end = next((i for i, c in enumerate(unit) if c.isdigit() or c == "."), len(unit))
        unit = unit[:unit_end]
        if unit not in _DURATION_UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        total += float(number) * _DURATION_UNITS[unit]
        text = text[len(number) + len(unit) :]
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's time.Duration.String for the defaults cobra prints (`15m0s`, `3s`, `1s`, `0s`)."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    frac = seconds - whole
    secs_text = f"{secs + frac:g}s" if frac else f"{secs}s"
    if hours:
        return f"{hours}h{minutes}m{secs_text}"
    return f"{minutes}m{secs_text}" if minutes else secs_text
