"""The one stage registry: every pipeline stage in order, with its contract: its config,
entry and command, the other stages' params it reads, the files it reads and writes, its
metrics and plots, and how long it may run.

``dvc.yaml`` (generated: ``components/dvc_yaml.py``), the CLI (``veiltune <command>``), the
Prefect flow's tasks and their limits, ``veiltune --help`` and the README's pipeline line all
come from ``STAGES``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from components.anonymize.config import AnonymizeConfig
from components.audit.config import AuditConfig
from components.base_model.config import BaseModelConfig
from components.core import paths
from components.core.config import apply_overrides as _apply_overrides
from components.core.config import build_configs, read_params
from components.core.config import names_param as _names_param
from components.core.stage import Metrics, StageContext, UnwrittenOutput
from components.evaluate.config import EvaluateConfig
from components.export.config import ExportConfig
from components.gate.config import GateConfig
from components.ingest.config import IngestConfig
from components.register.config import RegisterConfig
from components.review.config import ReviewConfig
from components.risk.config import RiskConfig
from components.stage_contract import HOUR, Plot, Stage, artifact, metrics_out, raw_out
from components.train.config import TrainConfig

logger = logging.getLogger(__name__)


_POLICY = "veiltune/policy"  # the policy lists: data, shipped with the package
_NER_ADAPTER = "veiltune/models/conversational_ner/adapter"  # anonymize.ner.model: conversational
_ANONYMIZED = Path("data/anonymized")

STAGES: tuple[Stage, ...] = (
    Stage(
        "ingest",
        "Validate a user corpus, or generate the embedded one; split train/held-out.",
        IngestConfig,
        deps=(artifact(f"{_POLICY}/taxonomy.yaml"),),
        outs=(
            raw_out(paths.RAW_DIR),
            raw_out(paths.INVENTORY),
            # owner-only as ingest writes it: DVC's cache would copy it back world-readable
            raw_out(paths.SPLITS),
        ),
        metrics=(metrics_out(paths.metrics_file("ingest")),),
    ),
    Stage(
        "base_model",
        "Turn the bundled SmolLM2 GGUF (or a named folder) into a HF model folder.",
        BaseModelConfig,
        outs=(artifact(paths.BASE_MODEL),),
        metrics=(metrics_out(paths.metrics_file("base_model")),),
    ),
    Stage(
        "anonymize",
        "Replace personal information: realistic surrogates, the same within a conversation "
        "(or numbered placeholders, a mask, the type: anonymize.replacement).",
        AnonymizeConfig,
        deps=(
            artifact(paths.RAW_CORPUS),
            artifact(paths.SALT, "surrogates: the run's secret seed"),
            artifact(paths.INVENTORY, "surrogates: no surrogate is a known PI value"),
            artifact(paths.BASE_MODEL, "surrogate.method lm: the base model proposes surrogates"),
            artifact(_POLICY, "the policy lists (data, shipped with the package)"),
            artifact(_NER_ADAPTER, "anonymize.ner.model conversational: veiltune's NER"),
        ),
        outs=(artifact(_ANONYMIZED),),
        metrics=(metrics_out(paths.metrics_file("anonymize")),),
        timeout_s=4 * HOUR,
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
        deps=(
            artifact(paths.RAW_CORPUS),
            artifact(paths.SALT, "residual items are recorded by salted digest, never text"),
            artifact(_ANONYMIZED),
        ),
        outs=(artifact(paths.RISK_DIR),),
        metrics=(metrics_out(paths.metrics_file("risk")),),
        folder_plots=(
            Plot(
                paths.RISK_TABLE.as_posix(),
                "Residual risk of the conversations (the table the gate reads)",
                x="score",
                # .dvc/plots/histogram.json: conversations by score, not a bar each
                template="histogram",
                why="the score of each conversation (ids and numbers, no text)",
                in_folder=True,
            ),
            Plot(
                paths.RISK_HISTOGRAM.as_posix(),
                why="the same scores binned, against the gate's threshold",
                in_folder=True,
            ),
        ),
        timeout_s=HOUR,
    ),
    Stage(
        "review",
        "Write the stratified sample of anonymized conversations for human review.",
        ReviewConfig,
        reads=("gate.threshold",),
        command=("review", "export"),
        deps=(
            artifact(paths.ANON_CORPUS),
            artifact(paths.ANON_SPANS, "surrogates are shown as their placeholders"),
            artifact(paths.RISK_TABLE),
        ),
        outs=(artifact(paths.REVIEW_DIR),),
        metrics=(metrics_out(paths.metrics_file("review")),),
    ),
    Stage(
        "gate",
        "Great Expectations gate: refuse the corpus unless mean + std of risk < threshold.",
        GateConfig,
        deps=(
            artifact(paths.RISK_TABLE),
            artifact(
                paths.metrics_file("risk"), "the corpus the table was computed on (its sha256)"
            ),
            artifact(paths.ANON_CORPUS, "hashed into the verdict: train checks it"),
            artifact(paths.SPLITS),
        ),
        outs=(artifact(paths.GATE_RESULT.parent),),
        metrics=(metrics_out(paths.metrics_file("gate")),),
    ),
    Stage(
        "train",
        "LoRA fine-tune the base model on the anonymized corpus.",
        TrainConfig,
        deps=(
            artifact(paths.BASE_MODEL),
            artifact(paths.ANON_CORPUS),
            artifact(paths.ANON_SPANS, "the masked baseline masks surrogates too"),
            artifact(paths.SPLITS),
            artifact(paths.RAW_CORPUS, "read only by the oracle baseline (train.corpus: raw)"),
            artifact(paths.AUDIT_CANARIES, "the one-run audit's canaries: those inserted"),
            artifact(paths.metrics_file("gate")),
        ),
        outs=(artifact(paths.ADAPTER),),
        metrics=(metrics_out(paths.metrics_file("train")),),
        plots=(
            Plot(
                paths.TRAIN_LOSS.as_posix(),
                "Training loss per step",
                x="step",
                y="loss",
                template="linear",
                why="the training loss at each logged step",
            ),
        ),
        timeout_s=24 * HOUR,
        retries=1,  # train resumes from its last checkpoint
    ),
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
            "train.privacy.enabled",
            "train.privacy.epsilon",
            "anonymize.detectors",
            "anonymize.replacement",
            "anonymize.surrogate.method",
        ),
        deps=(
            artifact(paths.BASE_MODEL),
            artifact(paths.ADAPTER),
            artifact(paths.RAW_CORPUS),
            artifact(paths.SPLITS),
        ),
        outs=(
            artifact(paths.PER_CONVERSATION, "scores by conversation id, never text"),
            artifact(
                paths.UTILITY_INTERVALS,
                "every score's 95% bootstrap interval (the headline's in evaluate.json too)",
            ),
        ),
        # `veiltune utility-report` reads every variant's from `dvc exp show`.
        metrics=(metrics_out(paths.metrics_file("evaluate")),),
        plots=(
            Plot(
                paths.UTILITY_SCORES.as_posix(),
                "Utility on held-out raw text (adapter and base)",
                x="adapter",
                y="metric",
                template="utility",  # .dvc/plots/utility.json: both columns, not x alone
                why="the adapter's scores and the base model's, a bar each",
            ),
        ),
        timeout_s=6 * HOUR,
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
        deps=(
            artifact(paths.BASE_MODEL),
            artifact(paths.ADAPTER),
            artifact(
                paths.RAW_DIR, "the attacker's side knowledge: raw text, planted canaries, the salt"
            ),
            artifact(paths.ANON_CORPUS),
            artifact(paths.ANON_SPANS, "plain sight: where the surrogates are"),
            artifact(paths.SPLITS),
            artifact(paths.INVENTORY),
            artifact(paths.metrics_file("train"), "the one-run audit: the ε train claims"),
        ),
        outs=(
            artifact(
                paths.AUDIT_DETAILS,
                "each audit's per-item figures (per canary, per info type), not a column each",
            ),
        ),
        metrics=(metrics_out(paths.metrics_file("audit")),),
        timeout_s=6 * HOUR,
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
        deps=(
            artifact(paths.ADAPTER),
            artifact(paths.BASE_MODEL, "logged once to the artifact store, by its content hash"),
            artifact(paths.ANON_CORPUS, "still the one the gate passed and train used"),
            artifact(paths.metrics_file("gate")),
            artifact(paths.metrics_file("audit")),
            artifact(paths.metrics_file("train")),
            artifact(paths.metrics_file("evaluate")),
            artifact(paths.metrics_file("ingest"), "the model card: the corpus and its datasets"),
            artifact(paths.metrics_file("base_model"), "the model card: the base model"),
        ),
        metrics=(
            metrics_out(paths.metrics_file("register")),
            metrics_out(paths.HEADLINE, "the run's verdicts in one row: `make results`"),
        ),
        always_changed=True,
        notes=(
            "Its effect is the registry, which DVC cannot restore: never replayed from the run "
            "cache (a replay once reported champion v2 while the registry's champion was v5). It "
            "runs on every `dvc repro` and registers nothing new when the registry already holds "
            "this adapter with the same evidence."
        ),
    ),
    Stage(
        "export",
        "Write the compliance bundle (report, model card, manifest with sha256 of every "
        "file, signed; zip); with --verify BUNDLE, check a bundle's files and signature.",
        ExportConfig,
        reads=("anonymize", "base_model", "gate", "train"),
        deps=(
            *(
                artifact(paths.metrics_file(stage))
                for stage in (
                    "ingest",
                    "base_model",
                    "anonymize",
                    "risk",
                    "review",
                    "gate",
                    "train",
                    "evaluate",
                    "audit",
                    "register",
                )
            ),
            artifact(paths.HEADLINE, "bundled with every metrics file"),
            artifact(paths.UTILITY_INTERVALS, "every utility score's interval, in the report"),
            artifact(paths.AUDIT_DETAILS, "the audits' per-item figures, in the report"),
            artifact(paths.RISK_DIR),
            artifact(paths.GATE_RESULT.parent),
            artifact(paths.REVIEW_DIR),
            artifact(paths.INVENTORY, "the bundle's PI scans: the inventory's values ..."),
            artifact(paths.SALT),
            artifact(paths.ID_PSEUDONYMS, "... a user corpus's original record ids ..."),
            artifact(
                paths.RAW_CORPUS, "... and what the detector finds, confirmed in the raw corpus"
            ),
            artifact(paths.ADAPTER),
            artifact(_POLICY, "the policy lists (data, shipped with the package)"),
        ),
        outs=(artifact(paths.BUNDLE), artifact(paths.BUNDLE.with_suffix(".zip"))),
        optional=(artifact(paths.UTILITY_REPORT),),
        notes=(
            "Also bundles reports/utility/ when `veiltune utility-report` made it (not a dep: it "
            "is optional); rerun `veiltune export` after a new utility report. It signs the "
            "manifest with export.signing_key (made on first use, kept out of data/raw's hash by "
            ".dvcignore; a new key needs `veiltune export` again) and tags the registered "
            "version with the manifest's sha256 and signature."
        ),
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


def run_stage(name: str, params_path: Path, *, workspace: Path = Path(".")) -> Metrics:
    """Run one stage as ``dvc repro`` does: its config from params, its entry, what it reads
    and writes held to its entry's contract, in ``workspace`` (the CLI's: the working
    directory)."""
    stage = BY_NAME[name]
    context = replace(for_stage(stage_context(params_path), name), workspace=workspace)
    metrics = stage.entry()(context.configs[name], context)
    # Under a launcher every rank runs the stage and rank 0 alone writes its outputs
    # (components.train.engine.world_rank).
    unwritten = stage.unwritten(workspace) if os.environ.get("RANK", "0") == "0" else []
    if unwritten:
        raise UnwrittenOutput(
            f"stage {name} did not write {', '.join(unwritten)}, which its entry in "
            "components/stages.py declares (and dvc.yaml lists: DVC would fail the stage)"
        )
    return metrics


def for_stage(context: StageContext, name: str) -> StageContext:
    """``context`` as stage ``name`` sees it: the params keys and metrics it reads checked
    against what its registry entry declares (``StageContext.setting``, ``metrics``)."""
    stage = BY_NAME[name]
    writes = frozenset(a.path for a in (*stage.outs, *stage.metrics)) | {
        p.path for p in stage.plots
    }
    reads = frozenset(a.path for a in (*stage.deps, *stage.optional)) | writes
    return replace(context, stage=name, reads=stage.params, inputs=reads, outputs=writes)


def names_param(dotted: str) -> bool:
    """Whether ``dotted`` names a key of params.yaml (``gate``, ``train.max_steps``, ...)."""
    return _names_param(dotted, SECTIONS)


def apply_overrides(params: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with dotted ``stage.key`` overrides applied, every stage validated."""
    return _apply_overrides(params, overrides, sections=SECTIONS)
