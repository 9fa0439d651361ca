"""``govern digest compare`` as text (terminals, logs) and Markdown (CI comments)."""

from __future__ import annotations

from govern import units
from govern.digest.report import Report
from govern.reports.compare import Change, Comparison

#: Characters of fingerprint shown in text and Markdown (the JSON has all of it).
FINGERPRINT_WIDTH = 90
SECTIONS = (
    ("slower", "Slower"),
    ("new", "New"),
    ("gone", "Gone"),
    ("faster", "Faster"),
)


def describe(digest: Report) -> str:
    span = f", {digest.first_seen} – {digest.last_seen}" if digest.first_seen else ""
    return (
        f"{digest.path} ({digest.producer}): {units.count(digest.events, 'grouped')} events, "
        f"{units.count(len(digest.classes), 'grouped')} classes, "
        f"{units.duration(digest.total_time, 'spaced')} total{span}"
    )


def headline(comparison: Comparison) -> str:
    counts = comparison.counts
    return (
        f"{counts['slower']} slower, {counts['new']} new, {counts['gone']} gone, "
        f"{counts['faster']} faster, {counts['unchanged']} unchanged "
        f"(threshold {comparison.threshold:.0%}, "
        f"at least {units.duration(comparison.min_time, 'spaced')})"
    )


def cells(change: Change) -> list[str]:
    """count, p95 and total as ``before → after`` (one side for new and gone classes)."""

    def pair(old: str, new: str) -> str:
        if change.before is None:
            return new
        if change.after is None:
            return old
        return f"{old} → {new}"

    before, after = change.before, change.after
    return [
        change.id[-16:],
        pair(
            units.count(before.count if before else None, "grouped", units.DASH),
            units.count(after.count if after else None, "grouped", units.DASH),
        ),
        pair(
            units.duration(before.p95 if before else None, "spaced"),
            units.duration(after.p95 if after else None, "spaced"),
        ),
        _change(change.p95_change),
        pair(
            units.duration(before.total if before else None, "spaced"),
            units.duration(after.total if after else None, "spaced"),
        ),
        _change(change.total_change),
    ]


HEADERS = ["query ID", "count", "p95", "Δ p95", "total time", "Δ total"]


def _change(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.0f}%"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= FINGERPRINT_WIDTH else text[: FINGERPRINT_WIDTH - 1] + "…"


def to_text(comparison: Comparison) -> str:
    lines = [
        f"before: {describe(comparison.before)}",
        f"after:  {describe(comparison.after)}",
        headline(comparison),
    ]
    for status, title in SECTIONS:
        changes = comparison.of(status)
        if not changes:
            continue
        rows = [HEADERS, *(cells(c) for c in changes)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
        lines.append("")
        lines.append(f"{title} ({len(changes)})")
        for index, row in enumerate(rows):
            text = "  ".join(
                value.ljust(width) if i == 0 else value.rjust(width)
                for i, (value, width) in enumerate(zip(row, widths, strict=True))
            )
            lines.append(
                f"  {text}  {'fingerprint' if index == 0 else _clip(changes[index - 1].fingerprint)}"
            )
    return "\n".join(lines) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def to_markdown(comparison: Comparison) -> str:
    lines = [
        "## Slow-log digest compared",
        "",
        f"- before: {_md_cell(describe(comparison.before))}",
        f"- after: {_md_cell(describe(comparison.after))}",
        f"- **{headline(comparison)}**",
    ]
    for status, title in SECTIONS:
        changes = comparison.of(status)
        if not changes:
            continue
        lines += ["", f"### {title} ({len(changes)})", ""]
        lines.append("| " + " | ".join([*HEADERS, "fingerprint"]) + " |")
        lines.append("|---|" + "---:|" * 5 + "---|")
        for change in changes:
            row = [*cells(change), f"`{_md_cell(_clip(change.fingerprint))}`"]
            row[0] = f"`{row[0]}`"
            lines.append(
                "| " + " | ".join(_md_cell(c) if not c.startswith("`") else c for c in row) + " |"
            )
    return "\n".join(lines) + "\n"
