"""One SQL statement as rules see it: tokens, where it came from, and cheap structure.

A statement is the subject of every static rule. It comes from a file (with
``file:line:column`` positions) or from a digest class (a sample query, the
class ID and its statistics, docs/design/rules.md "Subjects"). The structural helpers work on tokens
and parenthesis depth only, so they stay fast and never choke on syntax a
parser does not know; each is computed once, on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

from govern.rules.sql.lexer import NUMBER, OP, PARAM, QIDENT, STRING, WORD, Source, Token, tokenize

#: Words that may follow SELECT before its select list (MariaDB/MySQL select options).
SELECT_OPTIONS = frozenset(
    {
        "ALL",
        "DISTINCT",
        "DISTINCTROW",
        "HIGH_PRIORITY",
        "STRAIGHT_JOIN",
        "SQL_SMALL_RESULT",
        "SQL_BIG_RESULT",
        "SQL_BUFFER_RESULT",
        "SQL_CALC_FOUND_ROWS",
        "SQL_CACHE",
        "SQL_NO_CACHE",
        "MAX_STATEMENT_TIME",
    }
)
CACHE_HINTS = frozenset({"SQL_CACHE", "SQL_NO_CACHE"})

#: Words after which a table name follows in FROM/JOIN lists.
_TABLE_INTRODUCERS = frozenset({"FROM", "JOIN", "STRAIGHT_JOIN"})
#: Words that end a table reference list.
_TABLE_LIST_END = frozenset(
    {
        "WHERE",
        "GROUP",
        "HAVING",
        "ORDER",
        "LIMIT",
        "UNION",
        "EXCEPT",
        "INTERSECT",
        "FOR",
        "LOCK",
        "INTO",
        "WINDOW",
        "PROCEDURE",
        "ON",
        "USING",
        "SET",
        "RETURNING",
    }
)
#: INSERT [LOW_PRIORITY|DELAYED|HIGH_PRIORITY] [IGNORE] [INTO], DELETE [QUICK] …
_TABLE_PREFIX_WORDS = frozenset(
    {"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO", "QUICK"}
)
_JOIN_WORDS = frozenset({"JOIN", "INNER", "CROSS", "LEFT", "RIGHT", "OUTER", "NATURAL", "FULL"})


@dataclasses.dataclass(eq=False)
class Loop:
    """A LOOP/WHILE/REPEAT in a stored program; ``cursor`` is set when it FETCHes one."""

    kind: str
    token: Token
    cursor: str | None = None


@dataclasses.dataclass(frozen=True)
class TableRef:
    index: int  # token index of the name
    schema: str | None
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclasses.dataclass(eq=False)
class Statement:
    """A statement's tokens (code only) in its source, plus what encloses it."""

    source: Source
    tokens: list[Token]
    terminated: bool = True
    #: The CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT this statement is inside.
    routine: Statement | None = None
    #: Loops enclosing this statement inside a stored program, outermost first.
    loops: tuple[Loop, ...] = ()
    #: A BEGIN with no END before the end of the file.
    unclosed_block: bool = False
    #: Digest subjects (``govern digest``): the class ID and its statistics.
    class_id: str | None = None
    stats: Mapping[str, Any] | None = None
    #: Statements inside a stored program's body (for CREATE PROCEDURE and friends).
    body: list[Statement] = dataclasses.field(default_factory=list)
    #: Offset just past the terminating delimiter (None: the statement's last token).
    stop: int | None = None
    #: At the end of a file still waiting for a custom delimiter: (delimiter, line of its
    #: DELIMITER command). A block whose closing delimiter was forgotten ends here.
    open_delimiter: tuple[str, int] | None = None
    #: Built with ``compact=True``: IN lists of integers hold their first and last item only.
    compact: bool = False

    @classmethod
    def from_sql(
        cls,
        sql: str,
        *,
        path: str | None = None,
        class_id: str | None = None,
        stats: Mapping[str, Any] | None = None,
        compact: bool = False,
    ) -> Statement:
        """A subject from one statement's text: a digest sample or a test example.

        ``compact=True`` (a digest's samples) leaves out the middle of each ``IN (`` list
        of integers: ``IN (1, 2, …, 3000)`` becomes the tokens ``IN ( 1 , 3000 )``. No
        catalog rule reads those items (docs/design/rules.md "Screens"), and a sample's
        9 KB IN list is then two tokens instead of 6,000; :meth:`expanded` has them all."""
        tokens = tokenize(sql, delimiters=False, compact=compact)
        if "govern:" in sql:
            tokens = [t for t in tokens if t.kind != "comment"]
        return cls(Source(sql, path), tokens, class_id=class_id, stats=stats, compact=compact)

    def expanded(self) -> Statement:
        """This statement with every token (itself unless built with ``compact=True``)."""
        if not self.compact:
            return self
        return Statement.from_sql(
            self.source.text, path=self.source.path, class_id=self.class_id, stats=self.stats
        )

    # --- position and text ----------------------------------------------------------
    @property
    def start(self) -> int:
        return self.tokens[0].start if self.tokens else 0

    @property
    def end(self) -> int:
        return self.tokens[-1].end if self.tokens else 0

    @property
    def text(self) -> str:
        return self.source.slice(self.start, self.end)

    def position(self, index: int = 0) -> tuple[int, int]:
        """(line, column) of token ``index`` (the statement start by default)."""
        token = self.tokens[index] if self.tokens else None
        return self.source.position(token.start if token else 0)

    @cached_property
    def lines(self) -> tuple[int, int]:
        """First and last line the statement covers, its delimiter included."""
        last = max(self.end, self.stop or 0)
        return self.source.position(self.start)[0], self.source.position(max(last - 1, 0))[0]

    # --- structure --------------------------------------------------------------------
    @cached_property
    def depths(self) -> list[int]:
        """Parenthesis depth of each token (a bracket has the depth outside it)."""
        depths = []
        depth = 0
        for token in self.tokens:
            if token.kind is OP:
                if token.value == "(":
                    depths.append(depth)
                    depth += 1
                    continue
                if token.value == ")":
                    depth -= 1
            depths.append(depth)
        return depths

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(t.value for t in self.tokens if t.kind is WORD)

    @cached_property
    def keyword(self) -> str:
        """The statement's first word (``SELECT`` for ``(SELECT …) UNION …``), or ''."""
        for token in self.tokens:
            if token.kind is WORD:
                return token.value
            if token.value != "(":
                return ""
        return ""

    @cached_property
    def verb(self) -> str:
        """What the statement does: the keyword, with WITH … and MariaDB's
        ``SET STATEMENT var=value FOR …`` resolved to the statement they wrap."""
        if self.keyword == "SET" and len(self.tokens) > 1 and self.tokens[1].value == "STATEMENT":
            for index in self.word_indexes("FOR"):
                following = self.next_code(index)
                if self.depths[index] == 0 and following is not None and following.kind is WORD:
                    return following.value
            return self.keyword
        if self.keyword != "WITH":
            return self.keyword
        for index, token in enumerate(self.tokens):
            if (
                index > 0
                and self.depths[index] == 0
                and token.kind is WORD
                and token.value in ("SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE")
            ):
                return token.value
        return "WITH"

    @cached_property
    def creates(self) -> str | None:
        """For CREATE statements: TABLE, TEMPORARY TABLE, PROCEDURE, FUNCTION, TRIGGER, …"""
        if self.keyword != "CREATE":
            return None
        for index, token in enumerate(self.tokens[1:16], start=1):
            if token.kind is not WORD:
                continue
            if token.value in ("TABLE", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "VIEW"):
                temporary = any(t.value == "TEMPORARY" for t in self.tokens[1:index])
                return f"TEMPORARY {token.value}" if temporary else token.value
            if token.value in ("INDEX", "DATABASE", "SCHEMA", "USER", "SEQUENCE", "ROLE"):
                return token.value
        return None

    @cached_property
    def created_name(self) -> str | None:
        """The name a CREATE TABLE/FUNCTION/… defines (without schema), lower-cased."""
        kind = self.creates
        if kind is None:
            return None
        word = kind.split()[-1]
        for index, token in enumerate(self.tokens):
            if token.kind is WORD and token.value == word:
                name = self.qualified_name(index + 1)
                if name and name[1].upper() == "IF":  # IF NOT EXISTS
                    name = self.qualified_name(index + 4)
                return name[1].lower() if name else None
        return None

    def qualified_name(self, index: int) -> tuple[str | None, str, int] | None:
        """(schema, name, next index) of a possibly qualified identifier at ``index``."""
        tokens = self.tokens
        if index >= len(tokens) or tokens[index].kind not in (WORD, QIDENT):
            return None
        first = tokens[index]
        first_name = (
            first.value if first.kind is QIDENT else self.source.slice(first.start, first.end)
        )
        if (
            index + 2 < len(tokens)
            and tokens[index + 1].value == "."
            and tokens[index + 2].kind in (WORD, QIDENT)
        ):
            second = tokens[index + 2]
            second_name = (
                second.value
                if second.kind is QIDENT
                else self.source.slice(second.start, second.end)
            )
            return first_name, second_name, index + 3
        return None, first_name, index + 1

    def word_indexes(self, *values: str) -> Iterator[int]:
        """Indexes of WORD tokens with one of these (upper-case) values."""
        wanted = set(values)
        for index, token in enumerate(self.tokens):
            if token.kind is WORD and token.value in wanted:
                yield index

    def next_code(self, index: int) -> Token | None:
        return self.tokens[index + 1] if index + 1 < len(self.tokens) else None

    def is_call(self, index: int) -> bool:
        """Token ``index`` is a word directly followed by ``(``: a function call."""
        following = self.next_code(index)
        return following is not None and following.kind is OP and following.value == "("

    def closing(self, index: int) -> int:
        """Index of the ``)`` matching the ``(`` at ``index`` (or the last token)."""
        depths = self.depths
        depth = depths[index]
        for j in range(index + 1, len(self.tokens)):
            token = self.tokens[j]
            if depths[j] == depth and token.kind is OP and token.value == ")":
                return j
        return len(self.tokens) - 1

    # --- SELECT ----------------------------------------------------------------------
    @cached_property
    def selects(self) -> list[int]:
        return list(self.word_indexes("SELECT"))

    @cached_property
    def outer_select(self) -> int | None:
        """Index of the SELECT whose options decide caching (``None`` if not a query).

        That is the first SELECT of a SELECT statement, also inside the parentheses of
        ``(SELECT …) UNION …`` or after a WITH clause (measured on MariaDB 10.11).
        """
        if self.verb != "SELECT" or not self.selects:
            return None
        if self.keyword == "WITH":
            top = [i for i in self.selects if self.depths[i] == 0]
            return top[0] if top else None
        return self.selects[0]

    def select_option_indexes(self, select_index: int) -> list[int]:
        """Indexes of the option words right after the SELECT at ``select_index``."""
        found = []
        for j in range(select_index + 1, len(self.tokens)):
            token = self.tokens[j]
            if token.kind is WORD and token.value in SELECT_OPTIONS:
                found.append(j)
            else:
                break
        return found

    @cached_property
    def cte_names(self) -> frozenset[str]:
        if self.keyword != "WITH":
            return frozenset()
        names = set()
        for index, token in enumerate(self.tokens):
            if token.kind is WORD and token.value == "AS" and index > 0:
                before = self.tokens[index - 1]
                if before.value == ")":  # name (cols) AS (
                    opening = self._opening(index - 1)
                    before = self.tokens[opening - 1] if opening > 0 else before
                if before.kind in (WORD, QIDENT):
                    names.add(self._name_text(before).lower())
        return frozenset(names)

    def _opening(self, close_index: int) -> int:
        depth = self.depths[close_index]
        for j in range(close_index - 1, -1, -1):
            if self.depths[j] == depth and self.tokens[j].value == "(":
                return j
        return 0

    def _name_text(self, token: Token) -> str:
        return token.value if token.kind is QIDENT else self.source.slice(token.start, token.end)

    @cached_property
    def tables(self) -> list[TableRef]:
        """Tables read or written: names after FROM, JOIN, commas of a FROM list, UPDATE,
        INSERT/REPLACE … INTO; CTE names, DUAL and derived tables excluded."""
        tokens = self.tokens
        depths = self.depths
        refs: list[TableRef] = []
        introducers = set(_TABLE_INTRODUCERS)
        if self.keyword in ("UPDATE", "INSERT", "REPLACE"):
            introducers.update((self.keyword, "INTO"))
        in_from: set[int] = set()  # depths at which a FROM list is open
        index = 0
        count = len(tokens)
        while index < count:
            token = tokens[index]
            depth = depths[index]
            if token.kind is WORD and token.value in _TABLE_LIST_END - {"ON", "USING", "SET"}:
                in_from.discard(depth)
            is_comma = token.kind is OP and token.value == "," and depth in in_from
            if not is_comma and (token.kind is not WORD or token.value not in introducers):
                index += 1
                continue
            if token.value == "FROM":
                in_from.add(depth)
            index += 1
            while index < count and tokens[index].value in _TABLE_PREFIX_WORDS:
                index += 1
            name = self.qualified_name(index)
            if name is None or (name[0] is None and name[1].upper() in _TABLE_LIST_END):
                continue
            schema, table, index = name
            if schema is not None or (
                table.lower() not in self.cte_names and table.upper() != "DUAL"
            ):
                refs.append(TableRef(index - 1, schema, table))
            index = self._skip_table_suffix(index)
        return refs

    def _skip_table_suffix(self, index: int) -> int:
        """Past an alias, PARTITION (…), index hints and AS OF after a table name."""
        tokens = self.tokens
        count = len(tokens)
        while index < count:
            token = tokens[index]
            value = token.value if token.kind is WORD else None
            if value == "AS":
                index += 2
            elif value in ("USE", "FORCE", "IGNORE", "PARTITION"):
                while index < count and tokens[index].value != "(":
                    index += 1
                index = self.closing(index) + 1
            elif token.kind is QIDENT or (
                token.kind is WORD
                and value not in _TABLE_LIST_END
                and value not in _JOIN_WORDS
                and value not in ("STRAIGHT_JOIN", "VALUES", "VALUE", "SELECT", "SET", "WITH")
            ):
                index += 1  # a bare alias
            else:
                return index
        return index

    # --- INSERT ----------------------------------------------------------------------
    @cached_property
    def values_index(self) -> int | None:
        """Index of VALUES/VALUE starting the row list of INSERT/REPLACE."""
        if self.verb not in ("INSERT", "REPLACE"):
            return None
        for index, token in enumerate(self.tokens):
            if (
                token.kind is WORD
                and token.value in ("VALUES", "VALUE")
                and self.depths[index] == 0
            ):
                following = self.next_code(index)
                if following is not None and following.value == "(":
                    return index
            if token.kind is WORD and token.value in ("SELECT", "SET") and self.depths[index] == 0:
                return None
        return None

    @cached_property
    def row_spans(self) -> list[tuple[int, int]]:
        """(open, close) token indexes of each row tuple after VALUES."""
        start = self.values_index
        if start is None:
            return []
        spans = []
        tokens = self.tokens
        index = start + 1
        count = len(tokens)
        while index < count and tokens[index].value == "(":
            close = self.closing(index)
            spans.append((index, close))
            index = close + 1
            if index < count and tokens[index].value == ",":
                index += 1
            else:
                break
        return spans

    @property
    def row_count(self) -> int:
        """Rows in an INSERT/REPLACE … VALUES (1 for INSERT … SET, 0 otherwise)."""
        if self.row_spans:
            return len(self.row_spans)
        if self.verb in ("INSERT", "REPLACE") and self._insert_set:
            return 1
        return 0

    @cached_property
    def _insert_set(self) -> bool:
        return any(
            t.kind is WORD and t.value == "SET" and self.depths[i] == 0
            for i, t in enumerate(self.tokens)
        )

    @cached_property
    def placeholder_count(self) -> int:
        return sum(1 for t in self.tokens if t.kind is PARAM)

    @cached_property
    def odku_index(self) -> int | None:
        """Index of ON in ``ON DUPLICATE KEY UPDATE``."""
        if self.verb not in ("INSERT",):
            return None
        for index in self.word_indexes("DUPLICATE"):
            if index > 0 and self.tokens[index - 1].value == "ON" and self.depths[index] == 0:
                return index - 1
        return None

    @cached_property
    def row_alias_index(self) -> int | None:
        """Index of AS in ``INSERT … VALUES (…) AS new`` (the MySQL 8.0.19+ row alias)."""
        if not self.row_spans:
            return None
        after = self.row_spans[-1][1] + 1
        if after < len(self.tokens):
            token = self.tokens[after]
            if token.kind is WORD and token.value == "AS":
                return after
        return None

    # --- shapes ---------------------------------------------------------------------
    @cached_property
    def shape(self) -> tuple[tuple[str, str], ...]:
        """Token kinds and words with literals blanked: equal for statements that differ
        only in values (the parse cache key, and how runs of one write are spotted)."""
        blank = (STRING, NUMBER, PARAM)
        return tuple((t.kind, "?") if t.kind in blank else (t.kind, t.value) for t in self.tokens)
