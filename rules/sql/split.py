"""Split a SQL script into statements, the way the mysql client and migration tools do.

Handles ``DELIMITER`` lines, and stored programs written without them (a
``CREATE PROCEDURE … BEGIN … END;`` keeps its inner semicolons, as Flyway and
Liquibase expect). Bodies of stored programs are walked into their own
statements, each knowing the loops around it, so rules can look inside.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from govern.rules.sql.lexer import (
    COMMENT,
    DELIMITER,
    ERROR,
    OP,
    QIDENT,
    STRING,
    WORD,
    Comment,
    Source,
    Token,
    token_blocks,
    tokenize,
)
from govern.rules.sql.statement import Loop, Statement

_PROGRAMS = frozenset({"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"})
_BLOCK_ENDS = frozenset({"IF", "LOOP", "WHILE", "REPEAT"})
#: Tokens whose text the client does not search for a delimiter.
_OPAQUE = frozenset({STRING, QIDENT, ERROR, COMMENT})


@dataclasses.dataclass
class Script:
    """A whole file: its statements in order and the suppression comments in it."""

    source: Source
    statements: list[Statement]
    comments: list[Token]

    def all_statements(self) -> list[Statement]:
        """Top-level statements and, after each stored program, the statements of its body."""
        out: list[Statement] = []
        for statement in self.statements:
            out.append(statement)
            out.extend(statement.body)
        return out


def stream(
    read: Callable[[int], str],
    path: str | None,
    comments: list[Comment],
    chunk: int = 1 << 20,
) -> Iterator[Statement]:
    """The statements of a file read ``chunk`` characters at a time (``read`` as a text
    file's), for memory bounded by the largest statement rather than the file.

    The splitter runs over a window; the complete statements in it are yielded, and the
    window then starts again where the last of them ended, with its delimiter and line, so
    a statement cut by the window's end is read again whole. A window with no complete
    statement in it grows. ``govern:`` comments go to ``comments``, placed, as they are
    passed: those before a statement's end before it is yielded.
    """
    text = ""
    base = 0
    line = column = 1
    state = Delimiter()
    eof = False
    want = chunk
    while True:
        while not eof and len(text) < want:
            data = read(chunk)
            eof = not data
            text += data
        source = Source(text, path, base, line, column)
        found: list[Token] = []
        passed = 0  # comments of ``found`` given to ``comments``
        ended = 0  # offset in ``text`` past the last complete statement
        resume = Delimiter(state.value, state.line)
        window = Delimiter(state.value, state.line)
        for statement in split(source, found, window):
            if not eof and not statement.terminated:
                break
            ended = max(statement.end, statement.stop or 0)
            resume = Delimiter(window.value, window.line)
            comments.extend(source.comment(c) for c in found[passed:])
            passed = len(found)
            yield statement
        if eof:
            comments.extend(source.comment(c) for c in found[passed:])
            return
        if ended == 0:
            want = len(text) * 2  # no statement ends in the window: read more of it
            continue
        line, column = source.position(ended)
        base += ended
        text = text[ended:]
        state = resume
        want = chunk


def parse_script(text: str, path: str | None = None) -> Script:
    """Every statement of ``text`` at once (for tests and small inputs; lint streams)."""
    source = Source(text, path)
    comments: list[Token] = []
    return Script(source, list(split(source, comments)), comments)


def _starts_program(tokens: list[Token], index: int) -> bool:
    """Does the statement starting at ``index`` define a stored program (BEGIN … END)?"""
    first = tokens[index]
    if first.kind is not WORD:
        return False
    if first.value == "BEGIN":  # MariaDB's anonymous block: BEGIN NOT ATOMIC … END
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        return following is not None and following.value == "NOT"
    if first.value != "CREATE":
        return False
    for token in tokens[index + 1 : index + 16]:
        if token.kind is WORD and token.value in _PROGRAMS:
            return True
        if token.kind is WORD and token.value in ("TABLE", "VIEW", "INDEX", "DATABASE", "USER"):
            return False
    return False


#: Tokens the splitter may look ahead of the current one (``_starts_program`` reads 16).
_LOOKAHEAD = 24


@dataclasses.dataclass
class Delimiter:
    """The client's delimiter in force, and the line of the DELIMITER command that set it."""

    value: str = ";"
    line: int = 0


def split(
    source: Source, comments: list[Token], delimiter_state: Delimiter | None = None
) -> Iterator[Statement]:
    """The statements of ``source`` in order, one at a time, each with its body walked;
    ``govern:`` comments are appended to ``comments`` as they are met.

    Tokens arrive in blocks and each statement is yielded as soon as it ends, so a
    caller that checks and drops statements holds one statement's tokens, not the file's.
    ``delimiter_state`` is the delimiter to start with, kept current as DELIMITER lines go
    by (when a statement is yielded, it is the one that ended it).
    """
    text = source.text
    blocks = token_blocks(text)
    tokens: list[Token] = next(blocks, [])
    exhausted = not tokens
    current: list[Token] = []
    state = delimiter_state or Delimiter()
    delimiter = state.value
    depth = 0  # BEGIN/CASE … END nesting inside a stored program (only with ';')
    program = False

    def make(terminated: bool, stop: int | None = None) -> Statement:
        statement = Statement(
            source, current, terminated=terminated, unclosed_block=depth > 0, stop=stop
        )
        if not terminated and delimiter != ";":
            statement.open_delimiter = (delimiter, state.line)
        if statement.creates in _PROGRAMS or _anonymous_block(statement):
            statement.body = program_body(statement)
        return statement

    index = 0
    while True:
        if not exhausted and len(tokens) - index <= _LOOKAHEAD:
            block = next(blocks, None)
            if block is None:
                exhausted = True
            else:
                tokens = tokens[index:] + block
                index = 0
        if index >= len(tokens):
            break
        token = tokens[index]
        kind = token.kind
        if kind is COMMENT:
            comments.append(token)
            index += 1
            continue
        if kind is DELIMITER:
            if current:  # a word "delimiter" inside a statement: a column name, say
                tokens[index : index + 1] = tokenize(text, token.start, token.end, delimiters=False)
                continue
            delimiter = state.value = token.value
            state.line = source.position(token.start)[0]
            index += 1
            continue
        ends = False
        stop = token.end
        if delimiter == ";":
            ends = kind is OP and token.value == ";" and depth <= 0
            index += ends
        elif kind not in _OPAQUE:
            # The client looks for its delimiter in the raw text, not in tokens: ``END$$``
            # ends at ``$$`` though ``$`` may be part of a name (docs/design/rules.md).
            at = text.find(delimiter, token.start, token.end + len(delimiter) - 1)
            if at >= 0:
                ends = True
                stop = at + len(delimiter)
                if at > token.start:
                    current.extend(tokenize(text, token.start, at, delimiters=False))
                # Tokens after the delimiter were cut where the old token ended: read again.
                blocks = token_blocks(text, stop)
                tokens = next(blocks, [])
                exhausted = not tokens
                index = 0
        if ends:
            if current:
                yield make(True, stop)
            current = []
            depth = 0
            program = False
            continue
        if not current and delimiter == ";":
            program = _starts_program(tokens, index)
        if program and kind is WORD:
            value = token.value
            if value in ("BEGIN", "CASE"):
                depth += 1
            elif value == "END":
                following = _next_code(tokens, index)
                if following is None or following.value not in _BLOCK_ENDS:
                    depth -= 1
                if following is not None and following.value == "CASE":
                    current.append(token)
                    index += 1  # END CASE: do not count that CASE as an opening
                    token = tokens[index]
        current.append(token)
        index += 1
    if current:
        yield make(False)


def _anonymous_block(statement: Statement) -> bool:
    """MariaDB's ``BEGIN NOT ATOMIC … END`` (not ``BEGIN`` starting a transaction)."""
    tokens = statement.tokens
    return statement.keyword == "BEGIN" and len(tokens) > 1 and tokens[1].value == "NOT"


def _next_code(tokens: list[Token], index: int) -> Token | None:
    for following in range(index + 1, len(tokens)):
        if tokens[following].kind is not COMMENT:
            return tokens[following]
    return None


# --- stored-program bodies ---------------------------------------------------------------


def program_body(routine: Statement) -> list[Statement]:
    """The statements inside a stored program's BEGIN … END, each with its enclosing loops.

    Control flow (IF/CASE/WHILE/REPEAT/LOOP headers, labels, END …) is walked, not
    reported; every other statement becomes a subject of its own. A FETCH marks the
    loops around it as cursor loops.
    """
    tokens = routine.tokens
    begin = next((i for i, t in enumerate(tokens) if t.kind is WORD and t.value == "BEGIN"), None)
    if begin is None:
        return []
    body: list[Statement] = []
    frames: list[tuple[str, Loop | None]] = []
    index = begin
    count = len(tokens)

    def skip_past(word: str, start: int) -> int:
        """Index after the next ``word`` outside parentheses."""
        depth = 0
        for j in range(start, count):
            token = tokens[j]
            if token.kind is OP and token.value in "()":
                depth += 1 if token.value == "(" else -1
            elif depth == 0 and token.kind is WORD and token.value == word:
                return j + 1
        return count

    while index < count:
        token = tokens[index]
        value = token.value if token.kind is WORD else None
        following = tokens[index + 1] if index + 1 < count else None
        if (
            token.kind in (WORD, QIDENT)
            and following is not None
            and following.kind is OP
            and following.value == ":"
        ):
            index += 2  # a label
        elif value == "BEGIN":
            frames.append(("BEGIN", None))
            index += 1
            if following is not None and following.value == "NOT":
                index += 2  # NOT ATOMIC
        elif value in ("LOOP", "REPEAT", "WHILE"):
            loop = Loop(value, token)
            frames.append((value, loop))
            index = skip_past("DO", index + 1) if value == "WHILE" else index + 1
        elif value in ("IF", "ELSEIF"):
            if value == "IF":
                frames.append(("IF", None))
            index = skip_past("THEN", index + 1)
        elif value == "CASE":
            frames.append(("CASE", None))
            index = skip_past("WHEN", index + 1) - 1
        elif value == "WHEN" and frames and frames[-1][0] == "CASE":
            index = skip_past("THEN", index + 1)
        elif value == "ELSE":
            index += 1
        elif value == "UNTIL":
            index = skip_past("END", index + 1) - 1
        elif value == "END":
            if frames:
                frames.pop()
            index += 1
            if (
                index < count
                and tokens[index].kind is WORD
                and tokens[index].value
                in (
                    *_BLOCK_ENDS,
                    "CASE",
                )
            ):
                index += 1
            if not frames:
                break
            if (
                index < count
                and tokens[index].kind in (WORD, QIDENT)
                and tokens[index].value != ";"
            ):
                index += 1  # END LOOP label
        elif token.kind is OP and token.value == ";":
            index += 1
        else:
            end = _statement_end(tokens, index)
            loops = tuple(loop for _, loop in frames if loop is not None)
            stop = tokens[end].end if end < count else None
            inner = Statement(
                routine.source, tokens[index:end], routine=routine, loops=loops, stop=stop
            )
            if inner.keyword == "FETCH" and loops:
                _mark_cursor(inner, loops)
            body.append(inner)
            index = end + 1
    return body


def _statement_end(tokens: list[Token], start: int) -> int:
    """Index of the ``;`` ending the simple statement at ``start`` (CASE/BEGIN … END inside)."""
    parens = 0
    blocks = 0
    for j in range(start, len(tokens)):
        token = tokens[j]
        if token.kind is OP:
            if token.value == "(":
                parens += 1
            elif token.value == ")":
                parens -= 1
            elif token.value == ";" and parens <= 0 and blocks <= 0:
                return j
        elif token.kind is WORD:
            if token.value in ("CASE", "BEGIN"):
                blocks += 1
            elif token.value == "END":
                after = tokens[j + 1] if j + 1 < len(tokens) else None
                if after is None or after.value not in _BLOCK_ENDS:
                    blocks -= 1
                    if blocks < 0:  # the END of the enclosing block: no ';' before it
                        return j
    return len(tokens)


def _mark_cursor(fetch: Statement, loops: tuple[Loop, ...]) -> None:
    """``FETCH [NEXT FROM] cur INTO …``: the innermost loop iterates over ``cur``."""
    words = [t for t in fetch.tokens[1:] if t.kind in (WORD, QIDENT)]
    names = [t for t in words if t.value not in ("NEXT", "FROM")]
    if names:
        loops[-1].cursor = fetch._name_text(names[0])
