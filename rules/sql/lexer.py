"""A fast MySQL/MariaDB tokeniser: the one pass every rule shares.

Why not sqlglot's: rules mostly need the token stream (SQL_CACHE is only visible
there, comments must keep their positions, ``%s`` placeholders must not fail),
and one compiled regex is several times faster than a full parse. Tokens keep
their character offsets so findings point at ``file:line:column``.

MySQL rules followed: ``--`` starts a comment only when followed by whitespace;
``#`` starts a comment; ``/*!NNNNN … */`` and MariaDB's ``/*M!NNNNN … */`` are
executable comments whose contents are code; strings take backslash escapes and
doubled quotes; ``DELIMITER xx`` at the start of a line is a client command.
"""

from __future__ import annotations

import re
from bisect import bisect_right
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
    (?P<nl>\n)
    |(?P<delim>(?<![^\n])[^\S\n]*(?i:delimiter)[^\S\n]+(?P<dvalue>\S+)[^\n]*)
    |(?P<ws>[^\S\n]+)
    |(?P<lcomment>(?:--(?=\s|$)|\#)[^\n]*)
    |(?P<exec>/\*M?!\d*)
    |(?P<bcomment>/\*(?:[^*]++|\*(?!/))*+\*/)
    |(?P<ubcomment>/\*)
    |(?P<execend>\*/)
    |(?P<string>'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+")
    |(?P<ustring>['"])
    |(?P<qident>`(?:[^`]++|``)*+`)
    |(?P<uqident>`)
    |(?P<number>0[xX][0-9a-fA-F]+\b|0[bB][01]+\b|[xX]'[0-9a-fA-F]*'|[bB]'[01]*'
        |(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
    |(?P<param>\?|%\(\w+\)s|%s|(?<![\w:]):[^\W\d]\w*)
    |(?P<sysvar>@@(?:\w+\.)?\w+)
    |(?P<var>@(?:[\w$.]+|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`))
    |(?P<word>[^\W\d][\w$]*)
    |(?P<op>:=|<=>|<=|>=|<>|!=|->>|->|\|\||&&|<<|>>|[-+*/%=<>!~^&|(),.;:{}\[\]@])
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


class Source:
    """One text (a file, stdin or a digest sample) and the offsets of its lines."""

    __slots__ = ("_line_starts", "path", "text")

    def __init__(self, text: str, path: str | None = None) -> None:
        self.text = text
        self.path = path
        self._line_starts: list[int] | None = None

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            index = find("\n")
            while index >= 0:
                starts.append(index + 1)
                index = find("\n", index + 1)
            self._line_starts = starts
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


def tokenize(
    text: str, start: int = 0, end: int | None = None, *, delimiters: bool = True
) -> list[Token]:
    """All code tokens of ``text``; comments are dropped unless they carry ``govern:``.

    Never raises: an unterminated string or comment becomes an ERROR token that
    META001 reports, and tokenising stops there. ``start``/``end`` limit the scan
    to a span (offsets stay those of ``text``); ``delimiters=False`` reads a
    ``DELIMITER`` line as plain words.
    """
    tokens: list[Token] = []
    append = tokens.append
    pattern = _PATTERN if delimiters else _PATTERN_NO_DELIMITER
    for match in pattern.finditer(text, start, len(text) if end is None else end):
        kind = match.lastgroup
        if kind in ("nl", "ws", "exec", "execend"):
            continue
        start, end = match.span()
        if kind == "word":
            append(Token(WORD, match.group().upper(), start, end))
        elif kind == "op" or kind == "other":
            append(Token(OP, match.group(), start, end))
        elif kind == "lcomment" or kind == "bcomment":
            body = match.group()
            if "govern:" in body:
                append(Token(COMMENT, body, start, end))
        elif kind == "qident":
            append(Token(QIDENT, match.group()[1:-1].replace("``", "`"), start, end))
        elif kind == "delim":
            append(Token(DELIMITER, match.group("dvalue"), start, end))
        elif kind in ("ustring", "uqident", "ubcomment"):
            what = {"ustring": "string", "uqident": "quoted identifier", "ubcomment": "comment"}
            append(Token(ERROR, f"unterminated {what[kind]}", start, len(text)))
            break
        else:
            append(Token(_KINDS[str(kind)], match.group(), start, end))
    return tokens
