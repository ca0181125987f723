"""The transformer NER as a Presidio recognizer: a token classifier's entities reported as
the info types the label policy maps them to (``anonymize.ner``).

Presidio analyzes one text at a time; the model is fastest on many. ``PresidioDetector``
classifies a whole batch's texts at once and hands each text's spans to the analyzer inside
its NLP artifacts (``NerArtifacts``), which the analyzer gives every recognizer: this one
reads them there, and classifies a text itself only when it was analyzed alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

from components.anonymize.ner import ClassifiedSpan, TokenClassifier
from components.anonymize.taxonomy import to_presidio


class NerArtifacts(NlpArtifacts):
    """spaCy's artifacts of one text with the token classifier's spans over it."""

    def __init__(self, artifacts: NlpArtifacts, classified: Sequence[ClassifiedSpan]) -> None:
        # Not NlpArtifacts.__init__: it would compute the keywords again; they are copied.
        self.__dict__.update(artifacts.__dict__)
        self.classified = tuple(classified)


class TransformerNerRecognizer(EntityRecognizer):
    """Finds what a token classifier labels and the label policy maps to an info type.

    Args:
        classifier: the model.
        info_types: the model's labels -> info type (None: no PI, never reported).
        threshold: the lowest score reported.
    """

    def __init__(
        self,
        classifier: TokenClassifier,
        info_types: Mapping[str, str | None],
        *,
        threshold: float,
    ) -> None:
        self.classifier = classifier
        self._entities = {
            label: to_presidio(info_type)
            for label, info_type in info_types.items()
            if info_type is not None
        }
        self.threshold = threshold
        super().__init__(
            supported_entities=sorted(set(self._entities.values())), name=type(self).__name__
        )

    def load(self) -> None:  # the classifier comes loaded
        return None

    def classify(self, texts: Sequence[str]) -> list[list[ClassifiedSpan]]:
        """The model's spans over each text, every label and score (a batch at once)."""
        return self.classifier.classify(texts)

    def analyze(  # noqa: PLR0917 (Presidio's signature)
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[Any]:
        if isinstance(nlp_artifacts, NerArtifacts):
            classified: Sequence[ClassifiedSpan] = nlp_artifacts.classified
        else:
            classified = self.classify([text])[0]
        wanted = set(entities)
        return [
            RecognizerResult(entity, start, end, score)
            for start, end, entity, score in self.entity_spans(text, classified)
            if entity in wanted
        ]

    def entity_spans(
        self, text: str, classified: Sequence[ClassifiedSpan]
    ) -> list[tuple[int, int, str, float]]:
        """(start, end, Presidio entity, score) of the spans scored ``threshold`` or more
        whose label maps to an info type; neighbours of one entity with only whitespace
        between them are one (a GIVEN_NAME and a SURNAME: one PERSON), their score the
        mean over all their tokens."""
        joined: list[tuple[int, int, str, float, int]] = []
        for span in classified:
            entity = self._entities.get(span.label)
            if entity is None or span.score < self.threshold:
                continue
            if joined and _follows(text, joined[-1], start=span.start, entity=entity):
                start, _, _, score, n = joined[-1]
                total = n + span.n_tokens
                mean = (score * n + span.score * span.n_tokens) / total
                joined[-1] = (start, span.end, entity, mean, total)
            else:
                joined.append((span.start, span.end, entity, span.score, span.n_tokens))
        return [(start, end, entity, score) for start, end, entity, score, _ in joined]


def _follows(
    text: str, before: tuple[int, int, str, float, int], *, start: int, entity: str
) -> bool:
    """Whether a span of ``entity`` at ``start`` continues ``before`` across whitespace."""
    _, end, previous, _, _ = before
    return previous == entity and (start == end or text[end:start].isspace())
