"""The ingest stage's params: the corpus, its split, the canaries, DialogSum."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, get_args

from components.core.config import Count, NonEmpty, NonNegativeInt, OpenUnit, params_section
from components.core.config import require as _require

CanaryType = Literal["PHONE_NUMBER", "FINANCIAL_ACCOUNT_NUMBER"]
CANARY_TYPES = get_args(CanaryType)


# When DialogSum joins the corpus: auto only with the embedded corpus (ingest.corpus_path
# null), always with a user's corpus too, never. Its licence is non-commercial: a user's
# corpus gets it only when asked for.
DialogSumAppend = Literal["auto", "always", "never"]
DIALOGSUM_APPEND = get_args(DialogSumAppend)


@dataclass
@params_section("ingest.dialogsum")
class DialogSumConfig:
    """DialogSum dialogues appended to the corpus (CC BY-NC-SA 4.0, non-commercial): to the
    embedded corpus by default, to your own only with ``append: always``."""

    # from params.yaml's folder: the CC BY-NC-SA sample that ships with veiltune
    path: NonEmpty | None = "components/ingest/samples/dialogsum/dialogsum.dev.sample.jsonl"
    max_dialogues: Count = 200  # the first N records of the file
    # auto: only with the embedded corpus (corpus_path null); always: your corpus too; never
    append: DialogSumAppend = "auto"

    def __post_init__(self) -> None:
        _require(
            self.path != "", "ingest.dialogsum.path", allowed="a JSONL file path, or null for off"
        )
        _require(
            self.path is not None or self.append != "always",
            "ingest.dialogsum.path",
            allowed="a JSONL file path when ingest.dialogsum.append is always",
        )

    def appended_to(self, corpus_path: str | None) -> bool:
        """Whether DialogSum joins the corpus ``corpus_path`` names (None: the embedded one)."""
        if self.path is None or self.append == "never":
            return False
        return self.append == "always" or not corpus_path


@dataclass
@params_section("ingest")
class IngestConfig:
    SECTION: ClassVar[str] = "ingest"

    corpus_path: str | None = None  # None: generate the embedded corpus
    n_conversations: Count = 300
    seed: int = 13
    # evaluate scores held-out conversations only: an empty split would score nothing
    heldout_fraction: OpenUnit = 0.1
    # Canaries for the exposure audit: one random secret per (type, count), planted in
    # that many training conversations. An empty list plants none.
    canary_types: list[CanaryType] = field(default_factory=lambda: list(CANARY_TYPES))
    canary_repetitions: list[int] = field(default_factory=lambda: [1, 4, 16])
    # The one-run DP audit (audit.audits: dp_one_run): this many random secrets, each
    # inserted into training with probability ½ as a unit of its own (docs/privacy.md);
    # 0 draws none. Steinke et al. use 1,000.
    audit_canaries: NonNegativeInt = 0
    dialogsum: DialogSumConfig = field(default_factory=DialogSumConfig)
    # The sensitivity taxonomy (from params.yaml's folder): the paths a corpus's
    # ``sensitive`` spans may name.
    taxonomy: NonEmpty = "veiltune/policy/taxonomy.yaml"
    # Calls in the taxonomy's settings with sensitive facts and three reference summaries,
    # generated beside the embedded corpus (``sens-00001`` ...); 0 generates none.
    sensitive_conversations: NonNegativeInt = 0

    def __post_init__(self) -> None:
        _require(
            all(r >= 1 for r in self.canary_repetitions),
            "ingest.canary_repetitions",
            allowed="a list of integers >= 1",
        )
