"""``govern regressions`` as text (cron mail, logs) and Markdown (a PR or chat comment)."""

from __future__ import annotations

from govern import units
from govern.history.regressions import Outcome, Regression, Span

#: Characters of fingerprint shown (the JSON has all of it).
FINGERPRINT_WIDTH = 100


def _span(span: Span) -> str:
    return (
        f"{span.since:%Y-%m-%d %H:%M} – {span.until:%Y-%m-%d %H:%M}"
        f" ({units.plural(int(span.hours), 'hour')} with data)"
    )


def headline(outcome: Outcome) -> str:
    hosts = ", ".join(outcome.hosts) if len(outcome.hosts) <= 5 else f"{len(outcome.hosts)} hosts"
    found = len(outcome.per_host)
    what = "no regression" if not found else units.plural(found, "regression")
    fleet = f", {len(outcome.fleet)} fleet-wide" if outcome.fleet else ""
    rules = outcome.rules
    return (
        f"{what}{fleet} on {hosts or 'no host'}"
        f" (factor {rules.factor:g}×, at least {rules.min_count} events"
        f" and {units.duration(rules.min_time, 'spaced')})"
    )


def _where(regression: Regression) -> str:
    host = regression.host or "fleet"
    if regression.host is None and regression.hosts:
        host += f" ({', '.join(regression.hosts)})"
    return host


def _since(regression: Regression) -> str:
    if regression.changed_at is None:
        return ""
    return f" since {regression.changed_at:%Y-%m-%d %H:%M}"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= FINGERPRINT_WIDTH else text[: FINGERPRINT_WIDTH - 1] + "…"


def to_text(outcome: Outcome) -> str:
    lines = [
        f"store: {outcome.store}",
        f"baseline: {_span(outcome.baseline)}",
        f"window:   {_span(outcome.window)}",
        headline(outcome),
        *(f"{host}: not judged: {reason}" for host, reason in outcome.not_judged.items()),
    ]
    for regression in outcome.regressions:
        lines.append("")
        lines.append(
            f"{_where(regression)}  {regression.id[-16:]}  {'/'.join(regression.kinds)}"
            f"{_since(regression)}"
        )
        lines += [f"  {reason}" for reason in regression.reasons]
        lines.append(f"  {_clip(regression.fingerprint)}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def to_markdown(outcome: Outcome) -> str:
    lines = [
        "## Query regressions",
        "",
        f"- baseline: {_span(outcome.baseline)}",
        f"- window: {_span(outcome.window)}",
        f"- **{_cell(headline(outcome))}**",
        *(f"- {_cell(host)}: not judged: {reason}" for host, reason in outcome.not_judged.items()),
    ]
    if outcome.regressions:
        lines += [
            "",
            "| where | query ID | what | since | why | fingerprint |",
            "|---|---|---|---|---|---|",
        ]
    for regression in outcome.regressions:
        since = f"{regression.changed_at:%Y-%m-%d %H:%M}" if regression.changed_at else ""
        row = [
            _cell(_where(regression)),
            f"`{regression.id[-16:]}`",
            "/".join(regression.kinds),
            since,
            "<br>".join(_cell(reason) for reason in regression.reasons),
            f"`{_cell(_clip(regression.fingerprint))}`",
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
