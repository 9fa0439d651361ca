"""govern.units: the one parser and printer of durations, sizes and counts."""

from __future__ import annotations

import pytest

from govern import units


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (0.5, 0.5),
        ("90", 90.0),
        ("0.5", 0.5),
        ("90s", 90.0),
        ("15m", 900.0),
        ("15 m", 900.0),
        ("2H", 7200.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("500ms", 0.5),
        ("250us", 0.00025),
        ("250 µs", 0.00025),
        (".5s", 0.5),
        ("2d", 172800.0),
        ("1w", 604800.0),
        (" 7d ", 604800.0),
    ],
)
def test_durations_parse(text: object, seconds: float) -> None:
    assert units.parse_duration(text) == seconds


@pytest.mark.parametrize(
    "bad",
    ["", "soon", "1x", "m5", "-5", "5m 3", "1m30", "1.5.2s", "5.s", True, None, -1, float("inf")],
)
def test_a_bad_duration_says_what_is_expected(bad: object) -> None:
    with pytest.raises(ValueError) as raised:
        units.parse_duration(bad)
    assert str(raised.value) == f"expected {units.DURATION_EXAMPLE}, got {bad!r}"


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (512, 512),
        ("512", 512),
        ("64K", 65536),
        ("64k", 65536),
        ("16M", 16 << 20),
        ("16MiB", 16 << 20),
        ("16 MB", 16 << 20),
        ("1.5G", 3 << 29),
        ("5G", 5 << 30),
    ],
)
def test_sizes_parse_as_mysql_option_files_do(text: object, size: int) -> None:
    assert units.parse_size(text) == size


@pytest.mark.parametrize("bad", ["", "big", "16X", "-1", "1..5M", -1, True, 1.5])
def test_a_bad_size_says_what_is_expected(bad: object) -> None:
    with pytest.raises(ValueError) as raised:
        units.parse_size(bad)
    assert str(raised.value) == f"expected a size like 512, 64K, 16M or 1.5G, got {bad!r}"


@pytest.mark.parametrize(
    ("style", "seconds", "text"),
    [
        ("compact", 0.000085, "85us"),
        ("compact", 0.34, "340.0ms"),
        ("compact", 1.234, "1.23s"),
        ("compact", 1234.0, "1,234s"),
        ("compact", 0, "0us"),
        ("compact", None, "-"),
        ("clock", 12.34, "12.3s"),
        ("clock", 245, "4m05s"),
        ("clock", 4980, "1h23m"),
        ("clock", None, "-"),
        ("spaced", 0, "0 s"),
        ("spaced", 0.000004, "4 µs"),
        ("spaced", 0.0125, "12.5 ms"),
        ("spaced", 3.214, "3.21 s"),
        ("spaced", 245, "4 m 05 s"),
        ("spaced", 7800, "2 h 10 m"),
        ("spaced", 3 * 86400 + 4 * 3600, "3 d 4 h"),
        ("spaced", -2.5, "-2.50 s"),
        ("spaced", None, "–"),
        ("spaced", float("nan"), "–"),
        ("words", 45, "45 s"),
        ("words", 720, "12 min"),
        ("words", 6 * 3600, "6.0 h"),
        ("words", 3.2 * 86400, "3.2 days"),
    ],
)
def test_durations_print_in_each_style(
    style: units.DurationStyle, seconds: float | None, text: str
) -> None:
    assert units.duration(seconds, style) == text


@pytest.mark.parametrize(
    ("style", "seconds", "text"),
    [
        # a value whose shown number reaches the next unit moves up to it
        ("compact", 0.99996, "1.00s"),
        ("compact", 0.0009996, "1.0ms"),
        ("compact", 99.999, "100s"),
        ("clock", 59.96, "1m00s"),
        ("clock", 3599.6, "1h00m"),
        ("spaced", 0.09996, "100 ms"),
        ("spaced", 3599.6, "1 h 00 m"),
        ("words", 119.6, "2 min"),
        # both parts of a pair round together: 1 h 01 m 30 s is 1 h 02 m, as in every style
        ("clock", 3690, "1h02m"),
        ("spaced", 3690, "1 h 02 m"),
    ],
)
def test_a_duration_never_prints_as_a_full_unit_below(
    style: units.DurationStyle, seconds: float, text: str
) -> None:
    assert units.duration(seconds, style) == text


@pytest.mark.parametrize(
    ("style", "value", "text"),
    [
        ("compact", 987, "987"),
        ("compact", 2.5, "2.50"),
        ("compact", 12345, "12.3k"),
        ("compact", 4_560_000, "4.6M"),
        ("compact", 999_999, "1.0M"),
        ("compact", None, "-"),
        ("significant", 987, "987"),
        ("significant", 12345, "12.3k"),
        ("significant", 4_560_000, "4.56M"),
        ("significant", 2.5, "2.5"),
        ("significant", 0.00512, "0.00512"),
        ("significant", 999.96, "1.00k"),
        ("significant", None, "–"),
        ("grouped", 1_234_567, "1,234,567"),
        ("grouped", -1234, "-1,234"),
        ("grouped", None, "-"),
    ],
)
def test_counts_print_in_each_style(
    style: units.CountStyle, value: float | None, text: str
) -> None:
    assert units.count(value, style) == text


def test_a_missing_figure_prints_the_placeholder_asked_for() -> None:
    assert units.count(None, "grouped", units.DASH) == "–"
    assert units.share(None) == "-" and units.share(None, missing=units.DASH) == "–"
    assert units.size(None) == "-"


def test_shares_and_sizes() -> None:
    assert units.share(0.971) == "97%" and units.share(0.125, 1) == "12.5%"
    assert [units.size(v) for v in (512, 1536, 16 << 20, 4.2 * (1 << 30), 1023.9 * (1 << 20))] == [
        "512 B",
        "1.50 KiB",
        "16.0 MiB",
        "4.20 GiB",
        "1.00 GiB",
    ]
