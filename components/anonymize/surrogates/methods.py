"""Where surrogate values come from: one builder a method, one registry of them.

``anonymize.surrogate.method`` names one of ``SURROGATE_SOURCES`` (its validation reads this
registry). A builder gets the locale's realistic values (every method falls back on them),
the stage's config, the folder params are read from and the stage's own detector (built
only when a builder asks for it), and returns a ``SurrogateSource``
(``components/anonymize/surrogates/book.py``). Adding a method is one module in
``components/anonymize/surrogates/`` and one line here; heavy dependencies (a model) are
imported inside its builder, so naming a method costs nothing until it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from components.anonymize.surrogates import RealisticSource
from components.anonymize.surrogates.embedding import EmbeddingSource
from components.anonymize.surrogates.lm import LmSource, detector_check

if TYPE_CHECKING:
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.surrogates.realistic import RealisticValues


class SourceBuilder(Protocol):
    """A method's source of candidates: from the realistic values, the stage's config,
    the base model's folder, and the stage's detector when asked."""

    def __call__(
        self,
        values: RealisticValues,
        config: AnonymizeConfig,
        *,
        base_model: Path,
        detector: Callable[[], Any],
    ) -> Any: ...


def realistic(
    values: RealisticValues,
    config: AnonymizeConfig,
    *,
    base_model: Path,
    detector: Callable[[], Any],
) -> Any:
    """The locale's lists, context unused."""
    return RealisticSource(values)


def embedding(
    values: RealisticValues,
    config: AnonymizeConfig,
    *,
    base_model: Path,
    detector: Callable[[], Any],
) -> Any:
    """Realistic candidates, chosen by embedding distance in context (MiniLM)."""
    settings = config.surrogate
    return EmbeddingSource(values, settings.k, radius=settings.radius)


def lm(
    values: RealisticValues,
    config: AnonymizeConfig,
    *,
    base_model: Path,
    detector: Callable[[], Any],
) -> Any:
    """Values the base model proposes in context, each checked by the stage's own detector."""
    settings = config.surrogate
    check = detector_check(detector())  # is a candidate PI?
    return LmSource(values, base_model, k=settings.k, top1=settings.top1, check=check)


SURROGATE_SOURCES: Mapping[str, SourceBuilder] = {
    "realistic": realistic,
    "lm": lm,
    "embedding": embedding,
}
