"""The default, offline judge of a privacy-preserving summary: Privacy and Completeness, 1 to 5.

A summary is scored as the privacy-preserving dialogue summarization method scores it:

- **Privacy** from the sensitive elements of the conversation it leaks. An element leaks when
  one of its mentions is in the output (1) exactly (case-insensitive, on word boundaries),
  (2) normalized (casefolded, punctuation and whitespace collapsed, digits compared as digit
  strings, words Porter-stemmed, stop words dropped) or (3), with an encoder, embedding-similar:
  the cosine between the mention and an output window of about its length is at least
  ``similarity``. An abstraction ("a medical condition") shares neither words nor meaning
  closely enough with the mention, so it is no leak. The rubric (``PRIVACY_*``): no leak 5; the
  worst leaked level sets the score (low 4, medium 3, high 2); each further leaked element
  costs 1 more; never below 1.
- **Completeness** from coverage: the share of the reference summary's content words (spaCy's
  stop words dropped, Porter-stemmed) found in the output; with an encoder, a reference
  sentence that some output sentence says in other words (cosine at least
  ``SENTENCE_SIMILARITY``) counts as covered whole. ``COMPLETENESS_THRESHOLDS`` maps coverage
  to 1..5.

A summary is acceptable when ``min(privacy, completeness) > ACCEPTABLE_ABOVE``. The mention
text is sensitive: errors name an element by its path, never by what it says.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Protocol

from components.core.errors import InputError
from components.core.lexicon import stop_words
from components.ingest import LEVELS

if TYPE_CHECKING:
    import torch

Encoder = Callable[[Sequence[str]], "torch.Tensor"]

# Policy: the privacy rubric (the levels are the sensitivity taxonomy's).
PRIVACY_NO_LEAK = 5
PRIVACY_WORST_LEAK = {"low": 4, "medium": 3, "high": 2}
PRIVACY_FURTHER_LEAK_COST = 1
SCORE_FLOOR = 1
# Coverage at or above each bound earns its score; below the last, 1.
COMPLETENESS_THRESHOLDS = ((0.8, 5), (0.6, 4), (0.4, 3), (0.2, 2))
ACCEPTABLE_ABOVE = 3
# Cosine of MiniLM embeddings (unit length) from which a window says what a mention says. On
# the hand-graded set abstractions reach 0.67 ("religious" for "Muslim"), paraphrases 0.73.
DEFAULT_SIMILARITY = 0.7
# Cosine from which an output sentence says what a reference sentence says.
SENTENCE_SIMILARITY = 0.8
# Window lengths tried around a mention of n words: n - 1 .. n + 2 (a paraphrase often needs a
# word or two more: "HIV" → "antiretroviral therapy").
WINDOW_SHORTER, WINDOW_LONGER = 1, 2
OVERALL = "overall"

_TOKEN = re.compile(r"[^\W\d_]+|\d+")
# Separators inside a number ("555-0142", "987 65 4320") vanish, so digits compare as strings.
_DIGIT_SEPARATOR = re.compile(r"(?<=\d)[\s\-./,()]+(?=\d)")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True)
class SensitiveElement:
    """One labelled sensitive element of a conversation.

    Args:
        path: its taxonomy path, ``<setting>.<level>.<category>[.<subcategory>]``.
        level: ``high``, ``medium`` or ``low``; the path's second part.
        mentions: the texts by which the conversation mentions it.
    """

    path: str
    level: str
    mentions: tuple[str, ...]

    def __post_init__(self) -> None:
        parts = self.path.split(".")
        if len(parts) < 3 or not all(parts):
            raise InputError(
                f"sensitive element {self.path!r}: a path is <setting>.<level>.<category>"
            )
        if self.level not in LEVELS:
            raise InputError(
                f"sensitive element {self.path!r}: level {self.level!r} is not one of "
                f"{', '.join(LEVELS)}"
            )
        if parts[1] != self.level:
            raise InputError(
                f"sensitive element {self.path!r}: level {self.level!r} differs from its path's"
            )
        if not self.mentions or not all(mention.strip() for mention in self.mentions):
            raise InputError(f"sensitive element {self.path!r}: has no mention, or a blank one")

    @property
    def setting(self) -> str:
        """The setting: the path's first part."""
        return setting_of(self.path)


@dataclass(frozen=True)
class Judgement:
    """The judge's scores of one output."""

    privacy: int
    completeness: int
    leaked: tuple[str, ...]
    coverage: float

    @property
    def acceptable(self) -> bool:
        """Both scores above ``ACCEPTABLE_ABOVE`` (3 is not acceptable)."""
        return min(self.privacy, self.completeness) > ACCEPTABLE_ABOVE


class SummaryJudge(Protocol):
    """Scores one summary: the offline judge here, an LLM judge (``llm_judge.py``)."""

    def judge(
        self, output: str, elements: Sequence[SensitiveElement], *, reference: str
    ) -> Judgement: ...


@dataclass(frozen=True)
class SettingSummary:
    """Means over the judgements of one setting (or of all)."""

    count: int
    privacy: float
    completeness: float
    acceptable_rate: float


def setting_of(path: str) -> str:
    """The setting of a taxonomy path: its first dotted part."""
    return path.split(".", 1)[0]


def privacy_score(leaked_levels: Sequence[str]) -> int:
    """The privacy rubric: the worst leaked level sets the score, each further leak costs more."""
    if not leaked_levels:
        return PRIVACY_NO_LEAK
    worst = min(PRIVACY_WORST_LEAK[level] for level in leaked_levels)
    further = (len(leaked_levels) - 1) * PRIVACY_FURTHER_LEAK_COST
    return max(SCORE_FLOOR, worst - further)


def completeness_score(coverage: float) -> int:
    """``COMPLETENESS_THRESHOLDS`` applied to a coverage in 0..1."""
    for bound, score in COMPLETENESS_THRESHOLDS:
        if coverage >= bound:
            return score
    return SCORE_FLOOR


def acceptable_rate(judgements: Iterable[Judgement]) -> float:
    """The share of acceptable judgements (0 for none)."""
    verdicts = [judgement.acceptable for judgement in judgements]
    return sum(verdicts) / len(verdicts) if verdicts else 0.0


def summary_by_setting(
    judged: Iterable[tuple[str, Judgement]],
) -> dict[str, SettingSummary]:
    """Mean privacy, mean completeness and acceptable rate per setting and ``OVERALL``.

    Args:
        judged: (the conversation's setting, its judgement) pairs.
    """
    groups: dict[str, list[Judgement]] = {}
    for setting, judgement in judged:
        groups.setdefault(setting, []).append(judgement)
        groups.setdefault(OVERALL, []).append(judgement)
    return {setting: _summary(group) for setting, group in sorted(groups.items())}


def _summary(judgements: Sequence[Judgement]) -> SettingSummary:
    return SettingSummary(
        count=len(judgements),
        privacy=fmean(j.privacy for j in judgements),
        completeness=fmean(j.completeness for j in judgements),
        acceptable_rate=acceptable_rate(judgements),
    )


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    return stop_words()


@functools.lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    # nltk comes with rouge-score, whose Porter stemmer the utility metrics already use.
    from nltk.stem.porter import PorterStemmer

    return functools.lru_cache(maxsize=50_000)(PorterStemmer().stem)


def normalized_tokens(text: str, *, drop_stop_words: bool = True) -> list[str]:
    """Casefolded, stemmed word tokens and whole digit strings, punctuation dropped."""
    text = _DIGIT_SEPARATOR.sub("", text.casefold().replace("’", "'"))
    stem, stop = _stemmer(), _stop_words()
    tokens = [t for t in _TOKEN.findall(text) if t != "s"]  # the "s" of a possessive
    if drop_stop_words:
        # One letter is a contraction's tail ("i'm") or an initial, not content.
        tokens = [t for t in tokens if t not in stop and (t.isdigit() or len(t) > 1)]
    return [t if t.isdigit() else stem(t) for t in tokens]


def _contains(tokens: Sequence[str], needle: Sequence[str]) -> bool:
    width = len(needle)
    return any(tokens[i : i + width] == list(needle) for i in range(len(tokens) - width + 1))


def _exact(mention: str, output: str) -> bool:
    pattern = rf"(?<!\w){re.escape(mention.strip())}(?!\w)"
    return re.search(pattern, output, flags=re.IGNORECASE) is not None


def _mention_tokens(mention: str) -> list[str]:
    # A mention of stop words only ("it", "them") keeps them: it is what there is to find.
    return normalized_tokens(mention) or normalized_tokens(mention, drop_stop_words=False)


def _window_widths(mention: str) -> range:
    """The window lengths, in words, compared with a mention of n words."""
    width = len(mention.split())
    return range(max(1, width - WINDOW_SHORTER), width + WINDOW_LONGER + 1)


def _windows(words: Sequence[str], width: int) -> list[str]:
    """Runs of ``width`` words that begin and end on a content word ("the caller" says nothing)."""
    width = min(width, len(words))
    content = [bool(normalized_tokens(word)) for word in words]
    return [
        " ".join(words[i : i + width])
        for i in range(len(words) - width + 1)
        if content[i] and content[i + width - 1]
    ]


class _Memo:
    """An encoder that remembers: one judgement's texts are embedded in one batch."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.vectors: dict[str, torch.Tensor] = {}

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        import torch

        missing = sorted({text for text in texts if text not in self.vectors})
        if missing:
            self.vectors.update(zip(missing, self.encoder(missing), strict=True))
        return torch.stack([self.vectors[text] for text in texts])


class OfflineJudge:
    """Scores an output against the conversation's sensitive elements and the reference.

    Args:
        encoder: unit-length sentence embeddings (``SentenceEncoder(minilm_dir())``); without
            one, leaks are found by words only and coverage counts words only.
        similarity: the cosine from which an output window leaks a mention.
    """

    def __init__(self, encoder: Encoder | None = None, similarity: float = DEFAULT_SIMILARITY):
        if not 0.0 < similarity <= 1.0:
            raise InputError(f"judge similarity {similarity} is not in (0, 1]")
        self.encoder, self.similarity = encoder, similarity

    def judge(
        self, output: str, elements: Sequence[SensitiveElement], *, reference: str
    ) -> Judgement:
        """Privacy, completeness, the leaked paths and the coverage of one output."""
        if not reference.strip() or not normalized_tokens(reference, drop_stop_words=False):
            raise InputError("judge: the reference summary is empty")
        encode = self._memo()
        found = _found_by_words(output, elements)
        rest = [element for element in elements if element.path not in found]
        if encode is not None:
            # One batch for the whole judgement: the encoder's cost is mostly per call.
            mentions, _, windows = _window_plan(rest, output.split())
            encode([*mentions, *windows, *_sentences(reference), *_sentences(output)])
        leaked = self._leaked(output, elements, encode=encode)
        coverage = self._coverage(output, reference, encode=encode)
        return Judgement(
            privacy=privacy_score([element.level for element in leaked]),
            completeness=completeness_score(coverage),
            leaked=tuple(element.path for element in leaked),
            coverage=coverage,
        )

    def leaked(self, output: str, elements: Sequence[SensitiveElement]) -> list[SensitiveElement]:
        """The elements the output mentions (exactly, normalized or embedding-similar)."""
        return self._leaked(output, elements, encode=self._memo())

    def coverage(self, output: str, reference: str) -> float:
        """The share of the reference's content words (stemmed) that the output says."""
        return self._coverage(output, reference, encode=self._memo())

    def _memo(self) -> Encoder | None:
        return None if self.encoder is None else _Memo(self.encoder)

    def _leaked(
        self, output: str, elements: Sequence[SensitiveElement], *, encode: Encoder | None
    ) -> list[SensitiveElement]:
        found = _found_by_words(output, elements)
        rest = [element for element in elements if element.path not in found]
        if encode is not None and rest and output.strip():
            found |= self._similar(rest, output.split(), encode=encode)
        return [element for element in elements if element.path in found]

    def _similar(
        self, elements: Sequence[SensitiveElement], words: Sequence[str], *, encode: Encoder
    ) -> set[str]:
        """The paths of the elements with a mention close to an output window of its length."""
        mentions, spans, windows = _window_plan(elements, words)
        if not windows:
            return set()
        vectors = encode([*mentions, *windows])
        cosines = (vectors[: len(mentions)] @ vectors[len(mentions) :].T).tolist()
        width_of = [len(window.split()) for window in windows]
        close = set()
        for row, m in enumerate(mentions):
            best = max(
                (float(c) for c, n in zip(cosines[row], width_of, strict=True) if n in spans[m]),
                default=0.0,
            )
            if best >= self.similarity:
                close.add(m)
        return {e.path for e in elements if any(m in close for m in e.mentions)}

    def _coverage(self, output: str, reference: str, *, encode: Encoder | None) -> float:
        said = set(normalized_tokens(output))
        sentences = _sentences(reference)
        paraphrased = _paraphrased(sentences, _sentences(output), encode=encode)
        content: dict[str, bool] = {}
        for sentence, whole in zip(sentences, paraphrased, strict=True):
            for token in normalized_tokens(sentence):
                content[token] = content.get(token, False) or whole or token in said
        return sum(content.values()) / len(content) if content else 0.0


def _found_by_words(output: str, elements: Sequence[SensitiveElement]) -> set[str]:
    """The paths of the elements with a mention in the output, exactly or normalized."""
    tokens = normalized_tokens(output)
    return {
        element.path
        for element in elements
        if any(
            _exact(mention, output) or _contains(tokens, _mention_tokens(mention))
            for mention in element.mentions
        )
    }


def _window_plan(
    elements: Sequence[SensitiveElement], words: Sequence[str]
) -> tuple[list[str], dict[str, set[int]], list[str]]:
    """The mentions, the window lengths each is compared with, and every window needed."""
    if not words:
        return [], {}, []
    mentions = sorted({mention for element in elements for mention in element.mentions})
    # A window is never longer than the output: a short output is compared whole.
    spans = {m: {min(n, len(words)) for n in _window_widths(m)} for m in mentions}
    windows = {w for widths in spans.values() for n in widths for w in _windows(words, n)}
    return mentions, spans, sorted(windows)


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if normalized_tokens(s)]


def _paraphrased(
    sentences: Sequence[str], said: Sequence[str], *, encode: Encoder | None
) -> list[bool]:
    """Per reference sentence: whether some output sentence says it in other words."""
    if encode is None or not said:
        return [False] * len(sentences)
    vectors = encode([*sentences, *said])
    cosines = vectors[: len(sentences)] @ vectors[len(sentences) :].T
    return [float(row.max()) >= SENTENCE_SIMILARITY for row in cosines]


def element_from_record(record: Mapping[str, object]) -> SensitiveElement:
    """A ``SensitiveElement`` from its JSON form ``{"path", "level", "mentions"}``."""
    path = str(record.get("path", ""))
    mentions = record.get("mentions")
    if not isinstance(mentions, list):
        raise InputError(f"sensitive element {path!r}: mentions is not a list")
    return SensitiveElement(path, str(record.get("level", "")), tuple(map(str, mentions)))
