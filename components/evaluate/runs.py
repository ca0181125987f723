"""The runs a utility report compares, their per-conversation scores as bootstrap samples,
and the privacy figures (gate, residual risk, audits) to show beside their utility.

Runs come from the run store, ``<store>/<variant>/seed-<seed>/`` each holding a copy of one
run's ``evaluate.json`` and ``per_conversation.jsonl`` (``veiltune utility-profile`` fills
it), or from ``dvc exp show --json``: the newest experiment of each variant, its
per-conversation scores when DVC can still read them at that experiment, and its gate, risk
and audit metrics, which git carries in each experiment. The store holds no privacy
figures: the report then shows the workspace's ``metrics/`` (the pipeline's last run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.errors import InputError
from components.core.jsonio import iter_jsonl
from components.evaluate.variants import canonical
from components.ingest import MAIN

EVALUATE_METRICS = "metrics/evaluate.json"
PRIVACY_STAGES = ("gate", "risk", "audit")  # their metrics/<stage>.json: the privacy figures
EVALUATE_FILE = "evaluate.json"
PER_CONVERSATION_FILE = "per_conversation.jsonl"
RUN_KIND = "utility-run"  # a run folder of the store (its marker: components.core.atomic)
PERPLEXITY = "perplexity_raw"
_SEED_FOLDER = re.compile(r"seed-(\d+)")
_RECORD_FIELDS = {"model": str, "dataset": str, "id": str, "scores": dict, "n_tokens": int}

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Run:
    """One trained run: its variant and seed, where it came from (a store folder or an
    experiment's name), its evaluate.json, and its per-conversation records when known."""

    variant: str
    seed: int | None
    label: str
    evaluation: Mapping[str, Any]
    records: tuple[Record, ...] | None
    privacy: Mapping[str, Any] = field(default_factory=dict)  # privacy_figures(); {} if none


def run_folder(store: Path, variant: str, *, seed: int) -> Path:
    """Where the run store keeps one run of ``variant`` with training seed ``seed``."""
    return store / variant / f"seed-{seed}"


def collect_runs(store: Path) -> list[Run]:
    """Every run in the store, by variant then seed.

    Raises:
        InputError: a folder is not ``seed-<n>``, or a run's file is missing or malformed,
            or says it is another variant or seed than its folder.
    """
    runs = []
    for variant_dir in sorted(p for p in store.iterdir() if p.is_dir()):
        for folder in sorted(p for p in variant_dir.iterdir() if p.is_dir()):
            runs.append(read_run(folder, variant_dir.name))
    return sorted(runs, key=lambda run: (run.variant, run.seed or 0))


def read_run(folder: Path, variant: str) -> Run:
    """One run folder of the store (see :func:`collect_runs`)."""
    matched = _SEED_FOLDER.fullmatch(folder.name)
    if matched is None:
        raise InputError(f"{folder}: a run folder is named seed-<number>")
    seed = int(matched.group(1))
    path = folder / EVALUATE_FILE
    evaluation = read_evaluation(path)
    if canonical(str(evaluation["variant"])) != variant:
        raise InputError(f"{path}: variant {evaluation['variant']!r}, but its folder is {variant}")
    if evaluation.get("train_seed", seed) != seed:
        raise InputError(
            f"{path}: train_seed {evaluation['train_seed']}, but its folder is seed {seed}"
        )
    records = tuple(read_records(folder / PER_CONVERSATION_FILE))
    return Run(variant, seed, f"{variant}/{folder.name}", evaluation, records)


def read_evaluation(path: Path) -> dict[str, Any]:
    """A run's evaluate.json: a JSON object with its ``variant`` and ``adapter`` scores."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        evaluation = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON evaluate.json ({exc})") from exc
    if not (
        isinstance(evaluation, dict)
        and isinstance(evaluation.get("variant"), str)
        and isinstance(evaluation.get("adapter"), dict)
    ):
        raise InputError(f"{path}: not an evaluate.json (needs 'variant' and 'adapter')")
    return evaluation


def read_records(path: Path) -> Iterator[Record]:
    """The per-conversation records of a per_conversation.jsonl, each checked."""
    for line_no, record in iter_jsonl(path):
        yield check_record(record, f"{path}:{line_no}")


def parse_records(lines: Iterable[str], where: str) -> Iterator[Record]:
    """Per-conversation records from JSONL text read elsewhere (DVC's cache), each checked."""
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}:{line_no}: malformed JSON: {exc.msg}") from exc
        yield check_record(record, f"{where}:{line_no}")


def check_record(record: Any, where: str) -> Record:
    """``record`` when it is a per-conversation record of numbers, else an InputError."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: not a JSON object")
    for name, kind in _RECORD_FIELDS.items():
        if not isinstance(record.get(name), kind):
            raise InputError(f"{where}: '{name}' missing or not a {kind.__name__}")
    numbers = [record.get("loss_sum"), *record["scores"].values()]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        raise InputError(f"{where}: 'loss_sum' and every score must be numbers")
    return record


def samples(records: Iterable[Record], model: str) -> dict[str, dict[str, tuple[float, float]]]:
    """Metric key → bootstrap sample of one model's records (``adapter`` or ``base``): each
    score as (score, 1), perplexity as (loss sum, tokens); keys as evaluate.json names them
    (``summary.rouge1``, ``dialogsum.perplexity_raw``)."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for record in records:
        if record["model"] != model:
            continue
        prefix = "" if record["dataset"] == MAIN else f"{record['dataset']}."
        for key, value in record["scores"].items():
            found.setdefault(prefix + key, {})[record["id"]] = (float(value), 1.0)
        if record["n_tokens"] > 0:
            pair = (float(record["loss_sum"]), float(record["n_tokens"]))
            found.setdefault(prefix + PERPLEXITY, {})[record["id"]] = pair
    return found


def is_perplexity(key: str) -> bool:
    """Whether a metric key is a perplexity (a ratio to exponentiate; lower is better)."""
    return key.rsplit(".", 1)[-1] == PERPLEXITY


def runs_from_exp_show(
    exp_show: Sequence[Mapping[str, Any]],
    load_records: Callable[[str, str], tuple[Record, ...] | None],
) -> list[Run]:
    """The newest run of each variant that ``dvc exp show --json`` lists.

    Args:
        load_records: (run name, rev) → that run's per-conversation records, None when
            they cannot be read (an experiment from before they were written).
    """
    newest: dict[str, tuple[str, str, str, Mapping[str, Any], Mapping[str, Any]]] = {}
    for name, rev, data in _exp_runs(exp_show):
        shown = data.get("metrics") or {}
        evaluated = (shown.get(EVALUATE_METRICS) or {}).get("data")
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        if not evaluated or "adapter" not in evaluated:
            continue
        # The metrics file says what its adapter was trained on; the params beside it may
        # be newer than the outputs (a workspace reset after an experiment ran in it).
        variant = canonical(
            str(evaluated.get("variant") or (params.get("train") or {}).get("corpus", "anonymized"))
        )
        stamp = str(data.get("timestamp") or "")
        if variant not in newest or stamp > newest[variant][0]:
            privacy = {
                stage: (shown.get(f"metrics/{stage}.json") or {}).get("data") or {}
                for stage in PRIVACY_STAGES
            }
            newest[variant] = (stamp, name, rev, evaluated, privacy_figures(privacy))
    return [
        Run(variant, evaluated.get("train_seed"), name, evaluated, load_records(name, rev), privacy)
        for variant, (_, name, rev, evaluated, privacy) in sorted(newest.items())
    ]


def privacy_figures(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One run's headline privacy figures from its gate, risk and audit metrics (stage name
    → that metrics file's content): the gate's mean + std against its threshold and its
    verdict, the residual risk's mean, p95 and max, and each audit's verdict and headline
    figure. A stage without metrics (an experiment that stopped before its audit) gives no
    keys."""
    gate, risk, audit = (metrics.get(stage) or {} for stage in PRIVACY_STAGES)
    figures: dict[str, Any] = {}
    for key in ("mean", "std", "mu_plus_sigma", "threshold", "passed"):
        if key in gate:
            figures[f"gate.{key}"] = gate[key]
    for key in ("mean", "p95", "max"):
        if key in risk:
            figures[f"risk.{key}"] = risk[key]
    audits = audit.get("audits") or {}
    if "passed" in audit:
        figures["audit.passed"] = audit["passed"]
        figures["audit.failed"] = sorted(n for n, a in audits.items() if not a.get("passed"))
    for name, key, value in _audit_headlines(audits):
        figures[f"audit.{name}.{key}"] = value
    return figures


def _audit_headlines(audits: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(audit, figure, value): each attack's one number, as its threshold reads it."""
    figures = {name: (entry.get("figures") or {}) for name, entry in audits.items()}
    if "n_leaks" in figures.get("pii_output", {}):
        yield "pii_output", "n_leaks", figures["pii_output"]["n_leaks"]
    exposures = (figures.get("canary", {}).get("canary_exposure") or {}).values()
    if exposures:
        yield "canary", "max_exposure", max(exposures)
    if "extraction_rate" in figures.get("extraction", {}):
        yield "extraction", "extraction_rate", figures["extraction"]["extraction_rate"]
    if "mia_auc" in figures.get("membership", {}):
        yield "membership", "mia_auc", figures["membership"]["mia_auc"]


def privacy_section(runs: Sequence[Run], metrics_dir: Path) -> dict[str, Any]:
    """The report's privacy table: each run's own figures (experiments carry them), or,
    when no run has any (the run store keeps evaluate's files only), the figures of the
    pipeline's last run in this workspace, under the variant its evaluate.json names.

    Returns:
        ``source`` (where the figures come from, in words) and ``variants`` (variant →
        :func:`privacy_figures`); no variants when there are no figures anywhere.
    """
    own = {run.variant: dict(run.privacy) for run in runs if run.privacy}
    if own:
        files = ", ".join(f"metrics/{stage}.json" for stage in PRIVACY_STAGES)
        return {"source": f"each run's own {files} (DVC experiments)", "variants": own}
    found = {
        stage: _read_metrics(path)
        for stage in PRIVACY_STAGES
        if (path := metrics_dir / f"{stage}.json").is_file()
    }
    figures = privacy_figures(found)
    evaluated = metrics_dir / "evaluate.json"
    variant = canonical(str(read_evaluation(evaluated)["variant"])) if evaluated.is_file() else None
    source = (
        f"{metrics_dir}/ in this workspace: the pipeline's last run "
        f"({variant or 'not evaluated'}), as the runs compared carry no gate, risk or audit "
        "metrics (the run store keeps evaluate's files only)"
    )
    return {"source": source, "variants": {variant or "workspace": figures} if figures else {}}


def _read_metrics(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON metrics file ({exc})") from exc
    if not isinstance(found, dict):
        raise InputError(f"{path}: not a JSON object")
    return found


def _exp_runs(entries: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(name, rev, data) of the workspace, each baseline and every experiment under it."""
    for entry in entries:
        if entry.get("data"):
            yield str(entry.get("name") or entry.get("rev")), str(entry.get("rev")), entry["data"]
        for experiment in entry.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                if rev.get("data"):
                    name = rev.get("name") or experiment.get("name") or rev.get("rev")
                    yield str(name), str(rev.get("rev")), rev["data"]
