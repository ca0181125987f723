"""Build the detector and replacement policy that params select; shape detection output."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from components.anonymize import vocabulary
from components.anonymize.calibration import Thresholds, read_thresholds
from components.anonymize.compose import UnionDetector
from components.anonymize.config import DEFAULT_INFO_TYPES, AnonymizeConfig
from components.anonymize.engine import Detector, detect_batch
from components.anonymize.label_keys import PiLabelKeys, read_pi_label_keys
from components.anonymize.lm_probability import LmProbabilityDetector, load_scorer
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.surrogates import SurrogateKey, Surrogates
from components.anonymize.surrogates.methods import SURROGATE_SOURCES
from components.anonymize.surrogates.realistic import RealisticValues
from components.anonymize.taxonomy import PRESIDIO_TO_DLP
from components.anonymize.term_lists import read_term_lists
from components.core import paths
from components.core.corpus import TEXT_FIELDS, Conversation
from components.core.errors import InputError
from components.ingest import CONTEXT as DIALOGSUM_CONTEXT
from components.ingest import CONTEXT_WEIGHTS, OUTCOMES, PURPOSES, SETTINGS

if TYPE_CHECKING:
    from components.anonymize.evidence import NameEvidence
    from components.anonymize.recognizers.transformer_ner import TransformerNerRecognizer

DEFAULT_SPEAKER_ROLES = frozenset(
    {
        "agent",
        "customer",
        "caller",
        "client",
        "operator",
        "representative",
        "rep",
        "user",
        "system",
        "assistant",
        "bot",
        "speaker",
        "unknown",
        "interviewer",
        "patient",
        "doctor",
        "person",
    }
)


def build_detector(
    config: AnonymizeConfig,
    base_dir: Path = Path(),
    *,
    built: Mapping[str, Detector] | None = None,
    base_model: Path | None = None,
) -> Detector:
    """The detectors ``anonymize.detectors`` names, alone or as their union (entity spans
    first, word-level spans cut around them); policy files and models are relative to
    ``base_dir``. ``built`` holds detectors already made, by name, used in place of new
    ones (a sweep keeps the entity engine's answers while it varies another detector);
    ``base_model`` is the base_model stage's folder (:func:`lm_probability_detector`)."""
    made = dict(built or {})
    for name in config.detectors:
        if name not in made:
            made[name] = (
                entity_detector(config, base_dir)
                if name == "entities"
                else WORD_LEVEL_BUILDERS[name](config, base_dir, base_model=base_model)
            )
    entities = [made["entities"]] if "entities" in config.detectors else []
    words = [made[name] for name in config.detectors if name in WORD_LEVEL_BUILDERS]
    if len(entities) + len(words) == 1:
        return [*entities, *words][0]

    return UnionDetector(entities, words)


def entity_detector(config: AnonymizeConfig, base_dir: Path = Path()) -> Detector:
    """The detection backend named by ``anonymize.backend``, at the operating point that
    ``anonymize.calibration`` (relative to ``base_dir``) and ``operating_point`` select."""
    if config.backend == "google_dlp":
        return google_dlp_detector(config, base_dir)
    thresholds = detection_thresholds(config, base_dir)
    from components.anonymize.presidio_backend import PresidioDetector

    presidio = PresidioDetector(
        config.spacy_model,
        config.info_types,
        thresholds=thresholds,
        ner=ner_recognizer(config, base_dir),
        own=own_recognizers(config, base_dir),
        disabled=config.disabled_recognizers,
        corroborate=config.ner.corroborate,
    )
    if config.backend == "presidio":
        return presidio
    if config.backend == "google_dlp+presidio":
        return UnionDetector([google_dlp_detector(config, base_dir), presidio])
    raise AssertionError(f"unreachable: AnonymizeConfig accepted backend {config.backend!r}")


def own_recognizers(config: AnonymizeConfig, base_dir: Path = Path()) -> list[Any]:
    """The recognizers of ``anonymize.recognizers_file`` (none when it is null)."""
    if config.recognizers_file is None:
        return []
    from components.anonymize.recognizers.from_file import recognizers_from_file

    return recognizers_from_file(base_dir / config.recognizers_file, config.info_types)


def ner_recognizer(
    config: AnonymizeConfig, base_dir: Path = Path()
) -> TransformerNerRecognizer | None:
    """The transformer NER ``anonymize.ner`` describes (None when it is off): its model
    (relative to ``base_dir``), its labels mapped by the policy file ``anonymize.ner.labels``.

    Raises:
        InputError: the model is missing, unreadable or no token classifier, or the policy
            maps no info type for some of its labels (each named).
    """
    settings = config.ner
    if not config.uses_ner or settings.model is None:
        return None
    from components.anonymize.ner import info_types_of, load_token_classifier, read_label_policy
    from components.anonymize.recognizers.transformer_ner import TransformerNerRecognizer

    policy_file = base_dir / settings.labels
    policy = read_label_policy(policy_file, known_info_types(config))
    classifier = load_token_classifier(
        settings.model, base_dir, threads=ner_threads(config), batch_size=settings.batch_size
    )
    info_types = info_types_of(classifier.scheme.entities, policy, path=policy_file)
    return TransformerNerRecognizer(classifier, info_types, threshold=settings.threshold)


def ner_threads(config: AnonymizeConfig) -> int:
    """``anonymize.ner.threads``, or where it is null this process's share of the cores it
    may run on. spaCy's part of detection computes on one core; the NER's on as many as it
    is given, so a single detection process on a machine with idle cores runs it on them."""
    if config.ner.threads is not None:
        return config.ner.threads
    return max(1, len(os.sched_getaffinity(0)) // max(config.workers, 1))


def lm_probability_detector(
    config: AnonymizeConfig, base_dir: Path = Path(), *, base_model: Path | None = None
) -> Detector:
    """``lm_probability``: the base causal LM (``base_model``, the folder the stage reads
    from its workspace; ``models/base`` under ``base_dir`` when none is given), or the masked
    LM folder ``anonymize.lm_probability.model`` names."""
    settings = config.lm_probability
    folder = lm_probability_model(config, base_dir, base_model=base_model)
    scorer = load_scorer(
        folder,
        masked=settings.model is not None,
        max_tokens=settings.max_tokens,
        context_tokens=settings.context_tokens,
    )
    return LmProbabilityDetector(scorer, settings.p, settings.batch_size)


def lm_probability_model(
    config: AnonymizeConfig, base_dir: Path, *, base_model: Path | None
) -> Path:
    """The folder :func:`lm_probability_detector` loads.

    Raises:
        InputError: there is no such folder.
    """
    settings = config.lm_probability
    if settings.model is not None:
        folder = base_dir / settings.model
    else:
        folder = base_model or base_dir / paths.BASE_MODEL
    if not folder.is_dir():
        hint = "run the base_model stage" if settings.model is None else "a masked LM folder"
        raise InputError(f"{folder}: no such model (anonymize.lm_probability.model: {hint})")
    return folder


def allow_list_detector(
    config: AnonymizeConfig, base_dir: Path = Path(), *, base_model: Path | None = None
) -> Detector:
    """``allow_list``: every word outside the file ``anonymize.allow_list`` is masked."""
    return vocabulary.allow_list_detector(base_dir / config.allow_list)


def vocab_threshold_detector(
    config: AnonymizeConfig, base_dir: Path = Path(), *, base_model: Path | None = None
) -> Detector:
    """``vocab_threshold``: every word outside the ``anonymize.vocab_threshold`` most
    frequent English words is masked."""
    return vocabulary.vocab_threshold_detector(config.vocab_threshold)


class WordDetectorBuilder(Protocol):
    """Builds a word-level detector from the stage's config, params' folder and the base
    model's folder (the stage's, when it runs one)."""

    def __call__(
        self, config: AnonymizeConfig, base_dir: Path = ..., *, base_model: Path | None = None
    ) -> Detector: ...


# The word-level detectors of anonymize.detectors, by name (config.WORD_LEVEL_DETECTORS).
WORD_LEVEL_BUILDERS: dict[str, WordDetectorBuilder] = {
    "lm_probability": lm_probability_detector,
    "allow_list": allow_list_detector,
    "vocab_threshold": vocab_threshold_detector,
}


def google_dlp_detector(
    config: AnonymizeConfig, base_dir: Path = Path(), *, client: Any = None
) -> Detector:
    """Cloud DLP configured from ``config`` and the policy files; ``client`` stands in for
    the real ``DlpServiceClient`` (``anonymize.dlp`` builds that one)."""
    from components.anonymize.dlp_backend import MAX_FINDINGS, GoogleDlpDetector, dlp_client
    from components.anonymize.dlp_rules import dlp_rules

    rules = dlp_rules(config, base_dir, max_findings=MAX_FINDINGS)
    return GoogleDlpDetector(client or dlp_client(config.dlp), rules, config.dlp)


def detection_thresholds(config: AnonymizeConfig, base_dir: Path = Path()) -> Thresholds:
    """The score thresholds in force: the calibration file's operating point, or
    ``score_threshold`` alone when ``anonymize.calibration`` is null."""
    if config.calibration is None:
        return Thresholds(config.score_threshold, origin="anonymize.score_threshold")
    return read_thresholds(
        base_dir / config.calibration,
        config.operating_point,
        default=config.score_threshold,
        known_info_types=known_info_types(config),
    )


def known_info_types(config: AnonymizeConfig) -> set[str]:
    """The info types a policy file may name: veiltune's, DLP's and those params add."""
    return {*DEFAULT_INFO_TYPES, *PRESIDIO_TO_DLP.values(), *config.info_types}


def pi_label_keys(config: AnonymizeConfig, base_dir: Path = Path()) -> PiLabelKeys:
    """The label keys that name PI, from ``anonymize.pi_label_keys`` (none when null)."""
    if config.pi_label_keys is None:
        return PiLabelKeys()
    return read_pi_label_keys(base_dir / config.pi_label_keys, known_info_types(config))


def check_policy_files(
    config: AnonymizeConfig, base_dir: Path = Path(), *, base_model: Path | None = None
) -> None:
    """Read each of ``config.policy_files()`` as building would (the user's recognizers
    file too), load the NER's model against its label mapping and look for the
    ``lm_probability`` detector's model, so that a missing or malformed one is an error
    naming it now.

    Raises:
        InputError: a policy file is missing, not UTF-8 or not what its key needs; the NER's
            model is missing or its labels unmapped; the language model's folder is missing.
    """
    detection_thresholds(config, base_dir)
    read_term_lists(config.exclusions, config.dictionaries, base_dir=base_dir)
    pi_label_keys(config, base_dir)
    if "allow_list" in config.detectors:
        allow_list_detector(config, base_dir)
    if config.backend != "google_dlp":
        own_recognizers(config, base_dir)
    ner_recognizer(config, base_dir)
    if "lm_probability" in config.detectors:
        lm_probability_model(config, base_dir, base_model=base_model)


def anonymization_policy(
    config: AnonymizeConfig,
    base_dir: Path = Path(),
    *,
    key: SurrogateKey | None = None,
    base_model: Path | None = None,
) -> AnonymizationPolicy:
    """The policy params describe; term-list paths are relative to ``base_dir``.

    Args:
        key: the run's surrogate secret and inventory (the stage reads them from
            ``data/raw``); without one, surrogate mode draws a fresh secret, never stored.
        base_model: the base_model stage's folder, for ``anonymize.surrogate.method: lm``
            (``models/base`` under ``base_dir`` when none is given).
    """
    terms = read_term_lists(config.exclusions, config.dictionaries, base_dir=base_dir)
    return AnonymizationPolicy(
        config.replacement,
        config.mask_char,
        DEFAULT_SPEAKER_ROLES,
        terms,
        known_class_labels(config.class_labels),
        build_surrogates(config, base_dir, key=key, base_model=base_model)
        if config.replacement == "surrogate"
        else None,
        pi_label_keys(config, base_dir),
        name_evidence(config),
    )


def name_evidence(config: AnonymizeConfig) -> NameEvidence | None:
    """What vouches for a span on an everyday word (``anonymize.common_word_min_zipf``),
    with the dictionary of the spaCy model params name; None when it is off."""
    if config.common_word_min_zipf is None:
        return None
    from components.anonymize.evidence import NameEvidence  # loads spaCy (and torch)
    from components.anonymize.recognizers.name_gazetteer import common_surnames, english_first_names
    from components.anonymize.recognizers.place_gazetteer import place_names
    from components.anonymize.recognizers.transformer_ner import TransformerNerRecognizer
    from components.anonymize.recognizers.unfamiliar_words import english_lexicon

    # the NER reads the whole sentence: where it finds the name, the sentence vouches for it
    ner = {TransformerNerRecognizer.__name__} if config.ner.model else set()
    return NameEvidence(
        *english_lexicon(config.spacy_model),
        config.common_word_min_zipf,
        frozenset(ner),
        english_first_names() | common_surnames() | place_names(),
    )


def build_surrogates(
    config: AnonymizeConfig,
    base_dir: Path,
    *,
    key: SurrogateKey | None,
    base_model: Path | None = None,
) -> Surrogates:
    """The surrogate maker ``anonymize.surrogate`` describes."""
    import secrets

    key = key or SurrogateKey(secrets.token_hex(16))
    values = RealisticValues(config.surrogate.locale)
    build = SURROGATE_SOURCES[config.surrogate.method]
    source = build(
        values,
        config,
        base_model=base_model or base_dir / paths.BASE_MODEL,
        detector=lambda: entity_detector(config, base_dir),
    )
    return Surrogates(key, values, source=source)


def known_class_labels(extra: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    """The category values kept as they are: the embedded corpus's contexts, purposes and
    outcomes, DialogSum's context, ``unknown``, the sensitivity taxonomy's settings (the
    ``setting`` label of its calls), and those params add."""
    built_in = {
        "context": {*CONTEXT_WEIGHTS, DIALOGSUM_CONTEXT, "unknown"},
        "purpose": {purpose for values in PURPOSES.values() for purpose in values},
        "outcome": set(OUTCOMES),
        "setting": set(SETTINGS),
    }
    return {key: frozenset(values | set(extra.get(key, ()))) for key, values in built_in.items()}


def detection_records(
    conversations: Sequence[Conversation],
    detector: Detector,
    *,
    policy: AnonymizationPolicy,
    batch_size: int,
) -> Iterator[dict[str, Any]]:
    """``{"id", "spans"}`` per record: flat spans for plain text, ``turn``-tagged for turns,
    a speaker label's with ``"field": "speaker"`` (a turn's text's without ``field``, as in a
    corpus's ``pi`` spans).

    The spans are exactly those anonymize replaces in the turns: their texts (names
    propagated too) and their speaker labels (a name unless the policy lists it as a role).
    """
    for start in range(0, len(conversations), batch_size):
        batch = conversations[start : start + batch_size]
        for conversation, (fields, spans) in zip(
            batch, detect_batch(batch, detector, policy=policy), strict=True
        ):
            records = []
            for (where, _text), found in zip(fields, spans, strict=True):
                if where.kind not in TEXT_FIELDS:
                    continue
                for span in found:
                    record: dict[str, Any] = {
                        "start": span.start,
                        "end": span.end,
                        "entity_type": span.entity_type,
                        "score": round(span.score, 4),
                    }
                    if not conversation.plain:
                        record["turn"] = where.turn
                    if where.kind != "text":
                        record["field"] = where.kind
                    records.append(record)
            yield {"id": conversation.id, "spans": records}
