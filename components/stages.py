"""The one stage registry: every pipeline stage in order, with its config, its entry, its
command and what it reads of other stages' params.

``dvc.yaml`` (checked against it by a test), the CLI (``veiltune <command>``), the Prefect
flow, ``veiltune --help`` and the README's pipeline line all come from ``STAGES``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from components.anonymize.config import AnonymizeConfig
from components.audit.config import AuditConfig
from components.base_model.config import BaseModelConfig
from components.core import paths
from components.core.config import apply_overrides as _apply_overrides
from components.core.config import build_configs, read_params
from components.core.config import names_param as _names_param
from components.core.stage import Metrics, StageContext
from components.evaluate.config import EvaluateConfig
from components.export.config import ExportConfig
from components.gate.config import GateConfig
from components.ingest.config import IngestConfig
from components.register.config import RegisterConfig
from components.review.config import ReviewConfig
from components.risk.config import RiskConfig
from components.train.config import TrainConfig

logger = logging.getLogger(__name__)


class StageEntry(Protocol):
    def __call__(self, config: Any, context: StageContext, /) -> Metrics: ...


@dataclass(frozen=True)
class Stage:
    """One pipeline stage.

    Attributes:
        name: its key in ``dvc.yaml`` and ``params.yaml``, and its package under components/.
        help: one line for ``veiltune --help``.
        config: the dataclass of its ``params.yaml`` key.
        reads: other stages' params it reads (dotted keys, or a whole stage's key): what
            its ``dvc.yaml`` entry lists under ``params`` beside its own key.
        command: the CLI words that run it (``veiltune <command>``), also its dvc.yaml cmd.
    """

    name: str
    help: str
    config: type
    reads: tuple[str, ...] = ()
    command: tuple[str, ...] = ()

    @property
    def cli(self) -> tuple[str, ...]:
        return self.command or (self.name.replace("_", "-"),)

    @property
    def package(self) -> str:
        return f"components/{self.name}"

    @property
    def params(self) -> tuple[str, ...]:
        """What its dvc.yaml entry lists under ``params``: its own key, then ``reads``."""
        return (self.name, *self.reads)

    def entry(self) -> StageEntry:
        """``components.<name>.stage.run``, imported on first use (keeps ``--help`` fast)."""
        module = importlib.import_module(f"components.{self.name}.stage")
        entry: StageEntry = module.run
        return entry

    def summary(self, metrics: Metrics) -> str:
        """The one line a run of the stage prints, from the metrics it returned:
        ``<name>: `` and ``components.<name>.stage.summary``'s line."""
        module = importlib.import_module(f"components.{self.name}.stage")
        line: str = module.summary(metrics)
        return f"{self.name}: {line}"


STAGES: tuple[Stage, ...] = (
    Stage(
        "ingest",
        "Validate a user corpus, or generate the embedded one; split train/held-out.",
        IngestConfig,
    ),
    Stage(
        "base_model",
        "Turn the bundled SmolLM2 GGUF (or a named folder) into a HF model folder.",
        BaseModelConfig,
    ),
    Stage(
        "anonymize",
        "Replace personal information with placeholders numbered within each conversation.",
        AnonymizeConfig,
    ),
    Stage(
        "risk",
        "Score the residual risk of each conversation (ground truth and automatic scan).",
        RiskConfig,
        # its automatic estimate runs on the data stages' cluster, when one is set
        reads=(
            "gate.threshold",
            "anonymize.cluster",
            "anonymize.workers",
            "anonymize.cluster_timeout_s",
            "anonymize.cluster_tls",
        ),
    ),
    Stage(
        "review",
        "Write the stratified sample of anonymized conversations for human review.",
        ReviewConfig,
        reads=("gate.threshold",),
        command=("review", "export"),
    ),
    Stage(
        "gate",
        "Great Expectations gate: refuse the corpus unless mean + std of risk < threshold.",
        GateConfig,
    ),
    Stage("train", "LoRA fine-tune the base model on the anonymized corpus.", TrainConfig),
    Stage(
        "evaluate",
        "Utility on held-out raw text: ROUGE, accuracy/macro-F1, perplexity; base too.",
        EvaluateConfig,
        reads=(
            "train.corpus",
            "train.seed",
            "train.max_steps",
            "train.mask_loss_weight",
            "train.fragments.source",
            "anonymize.detectors",
            "anonymize.replacement",
            "anonymize.surrogate.method",
        ),
    ),
    Stage(
        "audit",
        "Attack the trained model: PI in outputs, canary exposure, extraction, membership.",
        AuditConfig,
        reads=(
            "anonymize",
            "train.corpus",
            "train.eval_fraction",
            "train.seed",
            "train.tasks",
        ),
    ),
    Stage(
        "register",
        "Register the adapter in MLflow as candidate; champion if gate and audits passed, it "
        "learnt from the anonymized corpus and its utility is at least the champion's.",
        RegisterConfig,
        # ingest: the datasets its model card names; anonymize's backend, detectors and
        # models: the detection models it names; export.signing_key: the key that signs
        # each version's evidence (the bundle's key)
        reads=(
            "train.corpus",
            "ingest",
            "anonymize.backend",
            "anonymize.detectors",
            "anonymize.spacy_model",
            "anonymize.ner.model",
            "export.signing_key",
        ),
    ),
    Stage(
        "export",
        "Write the compliance bundle (report, model card, manifest with sha256 of every "
        "file, signed; zip); with --verify BUNDLE, check a bundle's files and signature.",
        ExportConfig,
        reads=("anonymize", "base_model", "gate", "train"),
    ),
)

BY_NAME: Mapping[str, Stage] = {stage.name: stage for stage in STAGES}
SECTIONS: Mapping[str, type] = {stage.name: stage.config for stage in STAGES}


def pipeline_line() -> str:
    """The stages in order, as the README's first lines show them."""
    return " → ".join(stage.name for stage in STAGES)


def load_params(params_path: Path) -> dict[str, Any]:
    """params.yaml, every key a stage of the registry."""
    return read_params(params_path, SECTIONS)


def stage_context(params_path: Path) -> StageContext:
    """Every stage's validated config from params.yaml (a bad key anywhere is an error)."""
    params = load_params(params_path)
    return StageContext(params_path, params, build_configs(params, SECTIONS), tuple(BY_NAME))


def default_context() -> StageContext:
    """Every stage's config at its built-in defaults (which are params.yaml's), relative
    paths read from the installed packages' folder, where the policy files ship
    (``veiltune/policy``): the detection commands' context where there is no params file."""
    return StageContext(
        paths.PARAMS, {}, build_configs({}, SECTIONS), tuple(BY_NAME), root=paths.INSTALL_ROOT
    )


def detection_context(params: Path | None) -> StageContext:
    """The detection commands' params: the file named, else ./params.yaml, else (outside a
    checkout) the built-in defaults with the policy files shipped in the package."""
    if params is None and not paths.PARAMS.is_file():
        logger.info(
            "params: no %s here; using the built-in defaults and the policy files in %s",
            paths.PARAMS,
            paths.PACKAGED_POLICY,
        )
        return default_context()
    context = stage_context(paths.PARAMS if params is None else params)
    logger.info(
        "params: %s; policy files as it names them, from %s",
        context.params_path,
        context.base_dir.resolve(),
    )
    return context


def run_stage(name: str, params_path: Path) -> Metrics:
    """Run one stage as ``dvc repro`` does: its config from params, its entry."""
    context = stage_context(params_path)
    return BY_NAME[name].entry()(context.configs[name], context)


def names_param(dotted: str) -> bool:
    """Whether ``dotted`` names a key of params.yaml (``gate``, ``train.max_steps``, ...)."""
    return _names_param(dotted, SECTIONS)


def apply_overrides(params: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with dotted ``stage.key`` overrides applied, every stage validated."""
    return _apply_overrides(params, overrides, SECTIONS)
