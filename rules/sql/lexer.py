"""A fast MySQL/MariaDB tokeniser: the one pass every rule shares.

Why not sqlglot's: rules mostly need the token stream (SQL_CACHE is only visible
there, comments must keep their positions, ``%s`` placeholders must not fail),
and one compiled regex is several times faster than a full parse. Tokens keep
their character offsets so findings point at ``file:line:column``.

MySQL rules followed: ``--`` starts a comment only when followed by whitespace,
or anywhere at the start of a line (the mysql client skips such lines: ``--DROP
INDEX i`` is never sent); ``#`` starts a comment; ``/*!NNNNN … */`` and MariaDB's
``/*M!NNNNN … */`` are executable comments whose contents are code, except version
999999, which mariadb-dump writes for "no server" (``/*M!999999\\- enable the
sandbox mode */``); strings take backslash escapes and doubled quotes; ``DELIMITER
xx`` at the start of a line is a client command.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from sys import intern
from typing import NamedTuple

# Token kinds (plain strings: readable in tests and evidence, compared by identity).
WORD = "word"  # keyword or unquoted identifier; ``value`` is upper-cased
QIDENT = "qident"  # `quoted identifier`; ``value`` is the unquoted name
STRING = "string"
NUMBER = "number"
PARAM = "param"  # ?, %s, %(name)s, :name
VAR = "var"  # @user_variable
SYSVAR = "sysvar"  # @@system_variable
OP = "op"
DELIMITER = "delimiter"  # a client ``DELIMITER xx`` line; ``value`` is the new delimiter
ERROR = "error"  # unterminated string, quoted identifier or comment
COMMENT = "comment"  # only comments that mention ``govern:`` are kept (suppressions)

_REGEX = r"""
    (?P<delim>(?<![^\n])[^\S\n]*(?i:delimiter)[^\S\n]+(?P<dvalue>\S+)[^\n]*)
    |(?P<ws>[^\S\n]+|\n)
    |(?P<run>(?:\d+,[ ]?){8,})
    |(?P<number>[xX]'[0-9a-fA-F]*'|[bB]'[01]*'|0[xX][0-9a-fA-F]+\b|0[bB][01]+\b
        |(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
    |(?P<word>[^\W\d][\w$]*)
    |(?P<string>'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+")
    |(?P<lcomment>(?:(?<![^\n])--|--(?=\s|$)|\#)[^\n]*)
    |(?P<bcomment>/\*(?:M?!999999|(?!M?!))(?:[^*]++|\*(?!/))*+\*/)
    |(?P<exec>/\*M?!\d*)
    |(?P<execend>\*/)
    |(?P<ucomment>/\*)
    |(?P<param>\?|%\(\w+\)s|%s|(?<![\w:]):[^\W\d]\w*)
    |(?P<sysvar>@@(?:\w+\.)?\w+)
    |(?P<var>@(?:[\w$.]+|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`))
    |(?P<op>:=|<=>|<=|>=|<>|!=|->>|->|\|\||&&|<<|>>|[-+*/%=<>!~^&|(),.;:{}\[\]@])
    |(?P<qident>`(?:[^`]++|``)*+`)
    |(?P<unterminated>['"`])
    |(?P<other>.)
    """
_PATTERN = re.compile(_REGEX, re.VERBOSE | re.DOTALL)
#: The same without DELIMITER lines: for a ``delimiter`` word inside a statement (a column name).
_PATTERN_NO_DELIMITER = re.compile(_REGEX.replace("(?i:delimiter)", "(?!)"), re.VERBOSE | re.DOTALL)


#: Regex group → token kind (the constants, so ``token.kind is STRING`` holds).
_KINDS = {"string": STRING, "number": NUMBER, "param": PARAM, "var": VAR, "sysvar": SYSVAR}


class Token(NamedTuple):
    kind: str
    value: str  # upper-cased for WORD, unquoted for QIDENT, raw text otherwise
    start: int  # character offset in the source text
    end: int


class Comment(NamedTuple):
    """A ``govern:`` comment placed in its file: what a suppression needs once the window
    of text it came from is gone."""

    value: str
    offset: int  # in the file, to order it among statements
    line: int
    column: int
    end_line: int
    end_column: int


class Source:
    """A text (a file, stdin, a digest sample), or a window of a file read in pieces: then
    ``text`` is the window, which starts at character ``base`` of the file, on line ``line``
    and column ``column``. Token offsets are the text's; positions are the file's."""

    __slots__ = ("_line_starts", "base", "column", "line", "path", "text")

    def __init__(
        self, text: str, path: str | None = None, base: int = 0, line: int = 1, column: int = 1
    ) -> None:
        self.text = text
        self.path = path
        self.base = base
        self.line = line
        self.column = column
        self._line_starts: list[int] | None = None

    def slice(self, start: int, end: int) -> str:
        return self.text[start:end]

    def comment(self, token: Token) -> Comment:
        return Comment(
            token.value,
            self.base + token.start,
            *self.position(token.start),
            *self.position(token.end),
        )

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) in the file of a character offset of ``text``."""
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            index = find("\n")
            while index >= 0:
                starts.append(index + 1)
                index = find("\n", index + 1)
            self._line_starts = starts
        line = bisect_right(self._line_starts, offset)
        column = offset - self._line_starts[line - 1] + 1
        return self.line + line - 1, column + (self.column - 1 if line == 1 else 0)


def tokenize(
    text: str,
    start: int = 0,
    end: int | None = None,
    *,
    delimiters: bool = True,
    compact: bool = False,
) -> list[Token]:
    """All code tokens of ``text``; comments are dropped unless they carry ``govern:``.

    Never raises: an unterminated string or comment becomes an ERROR token that
    META001 reports, and tokenising stops there. ``start``/``end`` limit the scan
    to a span (offsets stay those of ``text``); ``delimiters=False`` reads a
    ``DELIMITER`` line as plain words. ``compact=True`` gives of an ``IN (`` list of
    integers only its first item and comma, then its last item (:meth:`Statement.from_sql`).
    """
    tokens: list[Token] = []
    for block in token_blocks(text, start, end, delimiters=delimiters, compact=compact):
        tokens.extend(block)
    return tokens


def _after_in(tokens: list[Token]) -> bool:
    """The last tokens are ``IN (``."""
    if len(tokens) < 2:
        return False
    bracket, word = tokens[-1], tokens[-2]
    return bracket.kind is OP and bracket.value == "(" and word.kind is WORD and word.value == "IN"


def token_blocks(
    text: str,
    start: int = 0,
    end: int | None = None,
    *,
    delimiters: bool = True,
    size: int = 8192,
    compact: bool = False,
) -> Iterator[list[Token]]:
    """The tokens of ``text`` in lists of about ``size``: a large file is never in memory
    as tokens all at once (the splitter consumes blocks as it goes)."""
    tokens: list[Token] = []
    append = tokens.append
    new = tuple.__new__  # twice as fast as Token(...) on a million tokens
    pattern = _PATTERN if delimiters else _PATTERN_NO_DELIMITER
    in_lists = compact
    for match in pattern.finditer(text, start, len(text) if end is None else end):
        kind = match.lastgroup
        if kind == "ws":
            continue
        if kind == "word":
            append(new(Token, (WORD, intern(match.group().upper()), *match.span())))
        elif kind == "run":
            # Integers each followed by a comma (an IN list): the tokens the alternatives
            # below would give, without a match per token.
            at = match.start()
            items = match.group().split(",")
            if in_lists and _after_in(tokens):
                del items[1:]  # ``compact``: the first item and its comma stand for the run
            for item in items:
                if not item or item == " ":
                    break  # the run ends with its last comma
                if item[0] == " ":
                    at += 1
                    item = item[1:]
                stop = at + len(item)
                append(new(Token, (NUMBER, item, at, stop)))
                append(new(Token, (OP, ",", stop, stop + 1)))
                at = stop + 1
        elif kind == "op" or kind == "other":
            append(new(Token, (OP, match.group(), *match.span())))
        elif kind in _KINDS:
            append(new(Token, (_KINDS[kind], match.group(), *match.span())))
        elif kind == "lcomment" or kind == "bcomment":
            body = match.group()
            if "govern:" in body:
                append(new(Token, (COMMENT, body, *match.span())))
        elif kind == "qident":
            append(new(Token, (QIDENT, match.group()[1:-1].replace("``", "`"), *match.span())))
        elif kind == "delim":
            append(new(Token, (DELIMITER, match.group("dvalue"), *match.span())))
        elif kind == "unterminated" or kind == "ucomment":
            opened = match.group()
            what = {"'": "string", '"': "string", "`": "quoted identifier"}.get(opened, "comment")
            append(
                Token(
                    ERROR,
                    f"unterminated {what}: this {opened} is never closed",
                    match.start(),
                    len(text),
                )
            )
            break
        if len(tokens) >= size:
            yield tokens
            tokens = []
            append = tokens.append
    if tokens:
        yield tokens
