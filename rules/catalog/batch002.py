"""BATCH002: A statement that takes a large share of max_allowed_packet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import CONSERVATIVE_PACKET, logged_max
from govern.rules.evidence import ClassFacts, plural
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class PacketShare(Rule):
    """A statement that takes a large share of max_allowed_packet.

    The server rejects a statement larger than max_allowed_packet (the connection
    drops with "Got a packet bigger than …"); long before that, huge statements
    stall replicas. The limit comes from the target (MySQL 8.0: 64 MiB, MariaDB
    10.2.4+: 16 MiB, MySQL 5.7: 4 MiB, or the live server's value), the option
    ``max-allowed-packet``, or, with neither, the conservative 4 MiB. Placeholders
    count ``placeholder-bytes`` each. On a digest the size is the class's largest
    logged statement (``Query_length``), not only its sample's.

    **Anti-pattern**

        -- config: {max-allowed-packet = 1024, share = 0.5}
        INSERT INTO notes (id, note) VALUES (1, 'a long note, repeated to fill the packet ................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................');

    **Best practice**

        -- config: {max-allowed-packet = 1024, share = 0.5}
        INSERT INTO notes (id, note) VALUES (1, 'short');
    """

    id = "BATCH002"
    name = "packet-share"
    severity = Severity.WARNING
    options = (
        Option("share", 0.5, "Flag statements above this fraction of max_allowed_packet."),
        Option("max-allowed-packet", 0, "Bytes; 0 takes the target's value (else 4 MiB)."),
        Option("placeholder-bytes", 16, "Bytes assumed per placeholder value."),
    )

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        threshold = self._limit(ctx)[0] * float(self.settings["share"])
        per_byte = 1 + int(self.settings["placeholder-bytes"])  # a byte may be a placeholder
        longest = screen.longer_than(threshold / per_byte)
        return longest | screen.logged_above("Query_length", threshold)

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        limit, origin = self._limit(ctx)
        threshold = limit * float(self.settings["share"])
        text = statement.text
        extra = statement.placeholder_count * int(self.settings["placeholder-bytes"])
        logged = logged_max(statement, "Query_length")
        if logged is None and (len(text) + extra) * 4 < threshold:
            return  # cannot reach it even at 4 bytes a character
        size = max(len(text.encode("utf-8", "surrogatepass")) + extra, logged or 0)
        if size <= threshold:
            return
        evidence = {"bytes": size, "max_allowed_packet": limit, "limit_from": origin}
        if statement.stats is None:
            yield self.finding(
                statement,
                f"statement of about {size:,} bytes is {size / limit:.0%} of max_allowed_packet "
                f"({limit:,} bytes, {origin}): split it into smaller batches",
                evidence=evidence,
            )
            return
        facts = ClassFacts(statement.stats)
        above = facts.count_above("Query_length", threshold)
        yield self.finding(
            statement,
            f"statements of up to {size:,} bytes, {size / limit:.0%} of max_allowed_packet "
            f"({limit:,} bytes, {origin}); {above:,} of {plural(facts.calls, 'call')} above "
            f"{float(self.settings['share']):.0%}: split them into smaller batches",
            evidence=evidence | {"calls": facts.calls, "statements_above": above},
        )

    def _limit(self, ctx: Context) -> tuple[int, str]:
        configured = int(self.settings["max-allowed-packet"])
        if configured > 0:
            return configured, "configured"
        if ctx.target is not None and "max_allowed_packet" in ctx.target.variables:
            return ctx.target.max_allowed_packet, ctx.target_label
        return CONSERVATIVE_PACKET, "no target: MySQL 5.7's default"
