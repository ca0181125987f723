"""The library warnings a veiltune user can do nothing about, silenced where they are emitted.

Each is named by its message, category and emitting module, so any other warning, even
another of the same library and category, still shows. Policy as data: ``KNOWN_WARNINGS``
(Python's ``warnings`` filters) and ``KNOWN_LOG_LINES`` (library loggers that print
warnings themselves); :func:`silence_library_noise` installs both, once per process.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownWarning:
    """One library warning to silence.

    Attributes:
        message: a regular expression the start of the warning's text must match.
        category: its class (``warnings`` also matches a subclass of it).
        module: a regular expression the whole name of the module it is attributed to
            (``warnings.warn``'s ``stacklevel``) must match.
        why: why a user can do nothing about it (kept here, beside the filter).
    """

    message: str
    category: type[Warning]
    module: str
    why: str


@dataclass(frozen=True)
class KnownLogLine:
    """One warning a library's own logger prints (not through ``warnings``)."""

    logger: str
    message: str  # a regular expression the start of the formatted message must match
    why: str


KNOWN_WARNINGS: tuple[KnownWarning, ...] = (
    KnownWarning(
        message=r"`is_gradient_checkpointing` is deprecated",
        category=FutureWarning,
        module=r"transformers\.modeling_utils",
        why="peft's get_peft_model reads the deprecated property of every model it wraps; "
        "veiltune never reads it, and transformers is pinned (constraints.txt) below v6, "
        "which removes it",
    ),
    KnownWarning(
        message=r"'pin_memory' argument is set as true but no accelerator is found",
        category=UserWarning,
        module=r"torch\.utils\.data\.dataloader",
        why="the Trainer asks for pinned batches, which only a GPU uses; on a CPU torch "
        "skips pinning, which is the right thing there",
    ),
)

KNOWN_LOG_LINES: tuple[KnownLogLine, ...] = (
    KnownLogLine(
        logger="DeepSpeed",
        message=r"Setting accelerator to CPU",
        why="DeepSpeed (imported by transformers) says so on every CPU machine; a GPU it "
        "finds, it uses, and training itself reports the device it runs on",
    ),
)


class _DropKnownLines(logging.Filter):
    """Drops the records whose message starts with one of ``patterns``."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        super().__init__()
        self._pattern = re.compile("|".join(f"(?:{p})" for p in patterns))

    def filter(self, record: logging.LogRecord) -> bool:
        return self._pattern.match(record.getMessage()) is None


def silence_library_noise() -> None:
    """Install the filters for ``KNOWN_WARNINGS`` and ``KNOWN_LOG_LINES`` in this process.

    Call it once, at process start: a filter added to a logger before its library creates
    it stays on it (``logging.getLogger`` returns the same object).
    """
    for known in KNOWN_WARNINGS:
        warnings.filterwarnings(
            "ignore", message=known.message, category=known.category, module=known.module + r"\Z"
        )
    by_logger: dict[str, tuple[str, ...]] = {}
    for line in KNOWN_LOG_LINES:
        by_logger[line.logger] = (*by_logger.get(line.logger, ()), line.message)
    for name, patterns in by_logger.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropKnownLines) for f in logger.filters):
            logger.addFilter(_DropKnownLines(patterns))
