"""A progress bar on a terminal, nothing when piped: the rule for all long work in govern."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from govern.output import is_terminal


class Progress(Protocol):
    def advance(self, amount: float = 1) -> None: ...

    def update_total(self, total: float | None) -> None: ...


class _Silent:
    def advance(self, amount: float = 1) -> None:
        pass

    def update_total(self, total: float | None) -> None:
        pass


class _Bar:
    def __init__(self, bar: object, task: object) -> None:
        self._bar = bar
        self._task = task

    def advance(self, amount: float = 1) -> None:
        self._bar.advance(self._task, amount)  # type: ignore[attr-defined]

    def update_total(self, total: float | None) -> None:
        self._bar.update(self._task, total=total)  # type: ignore[attr-defined]


@contextlib.contextmanager
def progress(
    description: str, total: float | None, *, force: bool | None = None
) -> Iterator[Progress]:
    """Yield something to ``advance``; draws on stderr only when stderr is a terminal."""
    show = is_terminal() if force is None else force
    if not show:
        yield _Silent()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    from govern.output import console

    with RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield _Bar(bar, task)
