"""Progress of the long loops (generating, scoring): a bar on stderr with its total, rate and
time left, redrawn at most every few seconds, so it costs nothing beside a model call."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

REFRESH_SECONDS = 5.0


def progress_bar(description: str, total: int, *, unit: str, shown: bool = True) -> Any:
    """A tqdm bar on stderr counting ``total`` ``unit``s (one that draws nothing unless
    ``shown``); close it, or use it as a context manager, when done."""
    from tqdm import tqdm

    return tqdm(
        desc=description,
        total=total,
        unit=unit,
        mininterval=REFRESH_SECONDS,
        file=sys.stderr,
        dynamic_ncols=True,
        disable=not shown,
    )


def counted(items: Sequence[T], description: str, *, unit: str, shown: bool = True) -> Iterator[T]:
    """``items`` one by one, each counted on a :func:`progress_bar` once the caller is done
    with it."""
    with progress_bar(description, len(items), unit=unit, shown=shown) as bar:
        for item in items:
            yield item
            bar.update()
