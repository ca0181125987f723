"""A pipeline run's results at a glance: the gate's, the audits' and the registry's verdicts
and the headline utility, read from the stages' metrics files, with the params that shaped
them. The pipeline's parent MLflow run carries them, so a glance at the experiment's run
list answers "did it pass, and how good is it" without opening a stage."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from components.core.jsonio import write_json_atomic

logger = logging.getLogger(__name__)

HEADLINE_STAGES = ("gate", "audit", "evaluate", "register")
DEFAULT_UTILITY_METRIC = "summary.rouge1"  # register.utility_metric's default
# The scores a reader looks at first, the first one a run has (the report's verdict; evaluate
# records their intervals): the main corpus's summary, else DialogSum's.
HEADLINE_METRICS = ("summary.rouge1", "dialogsum.summary.rouge1")
# The params a reader of a run's results wants beside them, as `section.key` of params.yaml.
HEADLINE_PARAMS = (
    "base_model.source",
    "train.corpus",
    "train.method",
    "train.max_steps",
    "train.learning_rate",
    "train.lora_r",
    "train.tasks",
    "gate.threshold",
    "register.utility_metric",
)


def headline_metrics(
    metrics: Mapping[str, Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, float | bool | str]:
    """The verdicts and headline numbers among ``metrics`` (by stage name; a stage with no
    metrics yet contributes nothing)."""
    out: dict[str, float | bool | str] = {}
    gate = metrics.get("gate") or {}
    for key in ("passed", "mu_plus_sigma", "threshold"):
        if key in gate:
            out[f"gate.{key}"] = gate[key]
    audit = metrics.get("audit") or {}
    if "passed" in audit:
        out["audit.passed"] = bool(audit["passed"])
    audits = audit.get("audits")
    if isinstance(audits, Mapping):
        verdicts = held_audits(audits)
        out["audit.n_passed"], out["audit.n_audits"] = sum(verdicts.values()), len(verdicts)
    register = metrics.get("register") or {}
    if "champion" in register:
        out["register.champion"] = bool(register["champion"])
        out["register.model_version"] = str(register.get("model_version", ""))
    out.update(_utility(metrics.get("evaluate") or {}, params))
    return out


def held_audits(audits: Mapping[str, Any]) -> dict[str, bool]:
    """Each audit of ``metrics/audit.json``'s ``audits`` that is held to a threshold, and
    whether it passed. An audit with none (``plain_sight``) reports figures and never fails:
    it is no pass, and every count of audits passed leaves it out."""
    return {
        str(name): bool(result.get("passed"))
        for name, result in audits.items()
        if isinstance(result, Mapping) and not reported_only(result)
    }


def reported_only(audit: Mapping[str, Any]) -> bool:
    """Whether one audit's result holds its figures to no threshold."""
    return not audit.get("thresholds")


def dvc_headline(results: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``headline_metrics``'s verdicts under short keys, numbers to 4 significant digits:
    the utility under its metric's name, the base model's as ``base``."""
    tags = headline_tags(results)
    metric = str((params.get("register") or {}).get("utility_metric", DEFAULT_UTILITY_METRIC))
    short: dict[str, Any] = {"gate": tags.get("gate"), "champion": tags.get("champion")}
    if "gate.mu_plus_sigma" in results:
        short["mu+sigma"] = _rounded(results["gate.mu_plus_sigma"])
    if "audit.n_audits" in results:
        short["audits"] = f"{results['audit.n_passed']}/{results['audit.n_audits']} passed"
    elif "audits" in tags:
        short["audits"] = tags["audits"]
    for model, key in (("adapter", metric), ("base", "base")):
        if f"utility.{model}.{metric}" in results:
            short[key] = _rounded(results[f"utility.{model}.{metric}"])
    return {k: v for k, v in short.items() if v is not None}


def verdict_line(results: Mapping[str, Any], metric: str = DEFAULT_UTILITY_METRIC) -> str:
    """``headline_metrics``'s verdicts in one sentence, for a page's first line (Prefect's
    ``pipeline-summary``); "no verdict yet" before any stage has one."""
    tags = headline_tags(results)
    parts = []
    if "gate" in tags:
        statistic = results.get("gate.mu_plus_sigma")
        threshold = results.get("gate.threshold")
        shown = "" if statistic is None else f" (μ+σ {statistic:.3g} against {threshold:g})"
        parts.append(f"gate {tags['gate']}{shown}")
    if "audits" in tags:
        parts.append(f"audits {tags['audits']}")
    if "champion" in tags:
        parts.append(f"champion: {tags['champion']}")
    adapter = results.get(f"utility.adapter.{metric}")
    if adapter is not None:
        base = results.get(f"utility.base.{metric}")
        against = "" if base is None else f" against the base model's {base:.3g}"
        parts.append(f"{metric} {adapter:.3g}{against}")
    return "Verdict: " + ("; ".join(parts) if parts else "no verdict yet") + "."


def write_dvc_headline(
    path: Path, metrics: Mapping[str, Mapping[str, Any]], *, params: Mapping[str, Any]
) -> None:
    """Write ``dvc_headline`` to ``path`` (nothing when no stage has a verdict yet): the row
    ``dvc metrics show metrics/headline.json`` prints in under 120 columns."""
    short = dvc_headline(headline_metrics(metrics, params), params)
    if short:
        write_json_atomic(path, short)


def _rounded(value: Any) -> Any:
    return float(f"{value:.4g}") if isinstance(value, float) else value


def read_headline_inputs(
    metrics_dir: Path, params_file: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The metrics files of ``HEADLINE_STAGES`` that exist, by stage, and params.yaml (a
    file that cannot be read is left out with a warning: a headline never fails a stage)."""
    metrics = {}
    for stage in HEADLINE_STAGES:
        found = _read_json(metrics_dir / f"{stage}.json")
        if found is not None:
            metrics[stage] = found
    try:
        params = yaml.safe_load(params_file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        logger.warning("headline: %s left out (%s)", params_file, type(exc).__name__)
        params = {}
    return metrics, params if isinstance(params, dict) else {}


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        logger.warning("headline: %s left out (%s)", path, type(exc).__name__)
        return None
    return found if isinstance(found, dict) else None


def headline_params(params: Mapping[str, Any]) -> dict[str, str]:
    """``HEADLINE_PARAMS`` that params.yaml sets, as strings."""
    found = {}
    for dotted in HEADLINE_PARAMS:
        section, _, key = dotted.partition(".")
        values = params.get(section)
        if isinstance(values, Mapping) and key in values:
            found[dotted] = str(values[key])
    return found


def _utility(evaluate: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, float]:
    """The utility metric the promotion rule reads, for the adapter and the base model."""
    register = params.get("register") or {}
    metric = str(register.get("utility_metric", DEFAULT_UTILITY_METRIC))
    found = {}
    for model in ("adapter", "base"):
        section = evaluate.get(model)
        value = section.get(metric) if isinstance(section, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            found[f"utility.{model}.{metric}"] = float(value)
    return found


def headline_tags(results: Mapping[str, Any]) -> dict[str, str]:
    """The verdicts among ``results`` in a few words each (the run list's columns)."""
    tags = {}
    if "gate.passed" in results:
        tags["gate"] = "passed" if results["gate.passed"] else "failed"
    if "audit.passed" in results:
        count = results.get("audit.n_audits")
        counted = "" if count is None else f"{results['audit.n_passed']}/{count} "
        tags["audits"] = (
            f"{counted}passed" if results["audit.passed"] else f"failed ({counted}passed)"
        )
    if "register.champion" in results:
        version = results.get("register.model_version")
        tags["champion"] = ("yes" if results["register.champion"] else "no") + (
            f" (v{version})" if version else ""
        )
    return tags
