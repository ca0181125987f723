"""The utility report: the run store read back, seed-averaged intervals, paired differences
from the oracle, the verdict, the report from DVC experiments (means, or intervals), and the
privacy figures beside utility (each experiment's own, or the workspace's for the store)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from components.core.errors import InputError
from components.evaluate.report import report_chart_png, report_markdown
from components.evaluate.runs import (
    collect_runs,
    privacy_figures,
    privacy_section,
    runs_from_exp_show,
)
from components.evaluate.stage import utility_csv
from components.evaluate.summary import summarize

N = 40  # held-out conversations of the main corpus; DialogSum has half as many


def _records(model: str, level: float, *, loss: float, seed: int) -> list[dict[str, Any]]:
    """Per-conversation records whose scores share each conversation's difficulty across
    runs (seeded by the conversation), plus a little noise of the run's own."""
    noise = np.random.default_rng(seed)
    records = []
    for dataset, n in (("main", N), ("dialogsum", N // 2)):
        for i in range(n):
            difficulty = np.random.default_rng(i).normal(0, 0.1)
            rouge1 = level + difficulty + noise.normal(0, 0.01)
            scores = {"summary.rouge1": rouge1, "summary.rougeL": rouge1 - 0.02}
            if dataset == "main":
                scores["purpose.accuracy"] = float(i % 3 != 0)
            tokens = 100 + i
            loss_sum = (loss + difficulty + noise.normal(0, 0.005)) * tokens
            records.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "id": f"{dataset}-{i}",
                    "scores": scores,
                    "loss_sum": loss_sum,
                    "n_tokens": tokens,
                }
            )
    return records


def _section(records: list[dict[str, Any]]) -> dict[str, Any]:
    """evaluate.json's section of one model, as the stage computes it from its records."""
    section: dict[str, Any] = {"purpose.macro_f1": 0.5}
    for dataset, prefix in (("main", ""), ("dialogsum", "dialogsum.")):
        mine = [r for r in records if r["dataset"] == dataset]
        for key in mine[0]["scores"]:
            section[prefix + key] = sum(r["scores"][key] for r in mine) / len(mine)
        loss = sum(r["loss_sum"] for r in mine) / sum(r["n_tokens"] for r in mine)
        section[prefix + "perplexity_raw"] = math.exp(loss)
    return section


def write_run(
    store: Path, variant: str, *, seed: int, level: float, loss: float, recorded: str | None = None
) -> Path:
    """A run folder as veiltune utility-profile leaves it."""
    folder = store / variant / f"seed-{seed}"
    folder.mkdir(parents=True)
    adapter = _records("adapter", level, loss=loss, seed=seed)
    base = _records("base", 0.1, loss=3.0, seed=0)
    evaluation = {
        "variant": recorded or variant,
        "train_seed": seed,
        "train_steps": 40,
        "n_conversations": N,
        "dialogsum.n_conversations": N // 2,
        "adapter": _section(adapter),
        "base": _section(base),
    }
    (folder / "evaluate.json").write_text(json.dumps(evaluation))
    lines = "".join(json.dumps(r) + "\n" for r in adapter + base)
    (folder / "per_conversation.jsonl").write_text(lines)
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "runs"
    for seed in (13, 14):
        write_run(store, "oracle", seed=seed, level=0.40, loss=2.00)
        write_run(store, "placeholder", seed=seed, level=0.30, loss=2.02)
        write_run(store, "surrogate-realistic", seed=seed, level=0.39, loss=2.01)
        write_run(store, "masked", seed=seed, level=0.33, loss=2.03)
    return store


def test_the_store_is_read_by_variant_and_seed(store: Path) -> None:
    runs = collect_runs(store)
    assert [(r.variant, r.seed) for r in runs][:2] == [("masked", 13), ("masked", 14)]
    assert {r.variant for r in runs} == {"oracle", "placeholder", "surrogate-realistic", "masked"}
    assert all(r.records and len(r.records) == 2 * (N + N // 2) for r in runs)


def test_each_variant_is_seed_averaged_with_an_interval_and_its_seed_spread(store: Path) -> None:
    variants = summarize(collect_runs(store), resamples=500)["variants"]
    assert set(variants) == {"base", "oracle", "placeholder", "surrogate-realistic", "masked"}
    oracle = variants["oracle"]
    assert oracle["seeds"] == [13, 14] and oracle["run"] == "oracle/seed-13, oracle/seed-14"
    assert oracle["n_conversations"] == {"main": N, "dialogsum": N // 2}
    low, high = oracle["intervals"]["summary.rouge1"]
    assert low < oracle["metrics"]["summary.rouge1"] < high
    assert abs(oracle["metrics"]["summary.rouge1"] - 0.40) < 0.05
    assert oracle["metrics"]["perplexity_raw"] == pytest.approx(math.exp(2.0), rel=0.05)
    spread = oracle["spread"]["summary.rouge1"]
    assert len(spread["per_seed"]) == 2 and spread["min"] <= spread["max"]
    assert "purpose.macro_f1" not in oracle["intervals"]  # no per-conversation form: mean only
    assert oracle["metrics"]["purpose.macro_f1"] == 0.5


def test_paired_differences_from_the_oracle_and_the_verdict(store: Path) -> None:
    summary = summarize(collect_runs(store), resamples=500)
    rouge = summary["differences"]["placeholder"]["summary.rouge1"]
    assert rouge["relative"]["estimate"] == pytest.approx(-0.25, abs=0.05)
    assert rouge["relative"]["high"] < -0.05  # the pairing resolves a 25% gap
    checks = summary["comparison"]
    near = checks["surrogate-realistic summary.rouge1 vs oracle"]
    assert near["met"] is True and near["target"] == "within 5% of oracle"
    assert near["statement"].startswith("surrogate-realistic summary.rouge1 vs oracle: -2.")
    assert "[" in near["statement"] and near["interval_narrower_than_gap"] in (True, False)
    assert checks["placeholder summary.rouge1 vs oracle"]["met"] is False
    assert checks["placeholder summary.rouge1 vs oracle"]["decided"] is True
    assert checks["surrogate-realistic perplexity_raw vs oracle"]["met"] is True
    assert "surrogate-realistic dialogsum.perplexity_raw vs oracle" in checks
    above = checks["surrogate-realistic summary.rouge1 vs placeholder"]
    assert above["met"] is True and above["decided"] is True
    assert above["interval_narrower_than_gap"] is True


def test_the_markdown_and_chart_show_intervals(store: Path) -> None:
    summary = summarize(collect_runs(store), resamples=200)
    table = report_markdown(summary)
    main, _, rest = table.partition("DialogSum")
    assert "| oracle | oracle/seed-13, oracle/seed-14 | 2 | 0." in main
    assert "| base |" in main and "(not run)" not in main
    oracle_row = next(line for line in main.splitlines() if line.startswith("| oracle |"))
    assert oracle_row.count("[") >= 2  # mean [lo, hi] cells
    assert "| surrogate-realistic |" in rest and "Difference from the oracle" in rest
    assert "Per-seed means" in rest and "| oracle | summary.rouge1 | 13, 14 |" in rest
    assert "- surrogate-realistic summary.rouge1 vs oracle: -" in rest
    assert report_chart_png(summary["variants"])[:4] == b"\x89PNG"


def test_an_old_anonymized_run_reads_as_placeholder(tmp_path: Path) -> None:
    write_run(tmp_path, "placeholder", seed=13, level=0.3, loss=2.0, recorded="anonymized")
    assert collect_runs(tmp_path)[0].variant == "placeholder"


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda f: (f / "per_conversation.jsonl").write_text('{"model": "adapter"\n'), "jsonl:1"),
        (lambda f: (f / "per_conversation.jsonl").write_text('{"model": 1}\n'), "jsonl:1"),
        (lambda f: (f / "evaluate.json").write_text("[]"), "evaluate.json"),
        (lambda f: (f / "evaluate.json").write_text("{"), "evaluate.json"),
        (lambda f: (f / "per_conversation.jsonl").unlink(), "per_conversation.jsonl"),
    ],
)
def test_a_malformed_run_file_is_named(tmp_path: Path, damage: Any, *, named: str) -> None:
    folder = write_run(tmp_path, "oracle", seed=13, level=0.4, loss=2.0)
    damage(folder)
    with pytest.raises(InputError, match=rf"oracle/seed-13/\S*{named}"):
        collect_runs(tmp_path)


def test_a_run_filed_under_another_variant_or_seed_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path, "masked", seed=13, level=0.3, loss=2.0, recorded="raw")
    with pytest.raises(InputError, match="masked/seed-13/evaluate.json: variant 'raw'"):
        collect_runs(tmp_path)
    (tmp_path / "masked" / "seed-13").rename(tmp_path / "masked" / "13")
    with pytest.raises(InputError, match="seed-<number>"):
        collect_runs(tmp_path)


def _exp_entry(name: str, folder: Path, *, stamp: str) -> dict[str, Any]:
    evaluated = json.loads((folder / "evaluate.json").read_text())
    return {
        "rev": f"sha-{name}",
        "name": name,
        "data": {"timestamp": stamp, "metrics": {"metrics/evaluate.json": {"data": evaluated}}},
    }


def test_experiments_give_means_only_without_their_records(tmp_path: Path) -> None:
    shown = [
        _exp_entry(
            "workspace",
            write_run(tmp_path, "anonymized", seed=13, level=0.30, loss=2.02),
            stamp="2026-01-02",
        ),
        {
            "rev": "abc",
            "name": "main",
            "data": None,
            "experiments": [
                {
                    "revs": [
                        _exp_entry(
                            "oracle",
                            write_run(tmp_path, "oracle", seed=13, level=0.4, loss=2.0),
                            stamp="1",
                        )
                    ]
                },
                {
                    "revs": [
                        _exp_entry(
                            "old",
                            write_run(tmp_path, "raw", seed=1, level=0.1, loss=9.0),
                            stamp="0",
                        )
                    ]
                },
            ],
        },
    ]
    asked: list[tuple[str, str]] = []
    runs = runs_from_exp_show(shown, lambda name, rev: asked.append((name, rev)))
    assert [(r.variant, r.label) for r in runs] == [
        ("oracle", "oracle"),
        ("placeholder", "workspace"),
    ]
    assert asked == [("oracle", "sha-oracle"), ("workspace", "sha-workspace")]
    summary = summarize(runs)
    assert summary["variants"]["oracle"]["intervals"] == {}
    gap = summary["comparison"]["placeholder summary.rouge1 vs oracle"]
    assert gap["decided"] is None and "[" not in gap["statement"]
    assert "| placeholder | workspace | 1 | 0." in report_markdown(summary)


def test_experiments_give_intervals_with_their_records(tmp_path: Path) -> None:
    folders = {
        v: write_run(tmp_path, v, seed=13, level=level, loss=2.0)
        for v, level in (("oracle", 0.4), ("masked", 0.3))
    }
    shown = [_exp_entry(v, f, stamp="1") for v, f in folders.items()]
    records = {
        f"sha-{v}": tuple(json.loads(line) for line in (f / "per_conversation.jsonl").open())
        for v, f in folders.items()
    }
    summary = summarize(runs_from_exp_show(shown, lambda _, rev: records[rev]), resamples=200)
    assert summary["variants"]["masked"]["intervals"]["summary.rouge1"]
    assert summary["differences"]["masked"]["summary.rouge1"]["relative"]["low"] is not None


def _privacy_metrics(mu: float, std: float, *, passed: bool, auc: float) -> dict[str, Any]:
    """metrics/gate.json, risk.json and audit.json as the stages write them (the parts read)."""
    audits = {
        "pii_output": {"passed": True, "figures": {"n_leaks": 0, "n_prompts": 24}},
        "canary": {"passed": True, "figures": {"canary_exposure": {"1": 2.5, "16": 6.25}}},
        "extraction": {"passed": True, "figures": {"extraction_rate": 0.0}},
        "membership": {"passed": auc <= 0.75, "figures": {"mia_auc": auc}},
        "plain_sight": {"passed": True, "figures": {}},
    }
    return {
        "gate": {"mean": mu, "std": std, "mu_plus_sigma": mu + std, "threshold": 5.0,
                 "passed": passed, "anonymized_corpus_sha256": "ab" * 32},
        "risk": {"mean": mu, "std": std, "p95": 1.0, "max": 3.0, "count": 20},
        "audit": {"passed": auc <= 0.75, "audits": audits, "train_corpus": "anonymized"},
    }  # fmt: skip


def _first_table(text: str) -> list[str]:
    """The rows of the first markdown table in ``text`` (header and rule left out)."""
    lines = text.strip().splitlines()
    rows = lines[lines.index(next(line for line in lines if line.startswith("| "))) :]
    table = rows[: rows.index("")] if "" in rows else rows
    return table[2:]


def test_privacy_figures_are_the_headline_of_gate_risk_and_audit() -> None:
    figures = privacy_figures(_privacy_metrics(0.25, 0.5, passed=True, auc=0.9))
    assert figures == {
        "gate.mean": 0.25,
        "gate.std": 0.5,
        "gate.mu_plus_sigma": 0.75,
        "gate.threshold": 5.0,
        "gate.passed": True,
        "risk.mean": 0.25,
        "risk.p95": 1.0,
        "risk.max": 3.0,
        "audit.passed": False,
        "audit.failed": ["membership"],
        "audit.pii_output.n_leaks": 0,
        "audit.canary.max_exposure": 6.25,
        "audit.extraction.extraction_rate": 0.0,
        "audit.membership.mia_auc": 0.9,
    }
    # an experiment stopped before its audit (utility-profile runs up to evaluate)
    assert set(privacy_figures({"gate": {"passed": True}})) == {"gate.passed"}
    assert privacy_figures({}) == {}


def test_experiments_carry_their_own_privacy_figures_beside_utility(tmp_path: Path) -> None:
    entries = []
    for name, variant, auc in (("oracle", "oracle", 0.9), ("workspace", "placeholder", 0.55)):
        entry = _exp_entry(
            name, write_run(tmp_path, variant, seed=13, level=0.3, loss=2.0), stamp="1"
        )
        for stage, data in _privacy_metrics(0.2, 0.4, passed=True, auc=auc).items():
            entry["data"]["metrics"][f"metrics/{stage}.json"] = {"data": data}
        entries.append(entry)
    runs = runs_from_exp_show(entries, lambda name, rev: None)
    assert {r.variant: r.privacy["audit.passed"] for r in runs} == {
        "oracle": False,
        "placeholder": True,
    }
    privacy = privacy_section(runs, tmp_path / "no-metrics")
    assert "DVC experiments" in privacy["source"] and set(privacy["variants"]) == {
        "oracle",
        "placeholder",
    }
    table = report_markdown({**summarize(runs), "privacy": privacy})
    section = table.partition("Privacy (from each run's own metrics/gate.json")[2]
    rows = {line.split(" | ")[0]: line for line in _first_table(section)}
    assert set(rows) >= {"| placeholder", "| oracle", "| masked"} and "| base" not in rows
    assert (
        "| 0.600 (0.200 + 0.400) vs 5 | passed | 0.20 / 1.00 / 3.00 | passed | 0 |"
        in (rows["| placeholder"])
    )
    assert "| failed: membership | 0 | 6.250 | 0.000 | 0.900 |" in rows["| oracle"]
    assert rows["| masked"].startswith("| masked | (not run) |")


def test_the_store_gets_the_workspace_privacy_figures_with_their_source_named(
    store: Path, tmp_path: Path
) -> None:
    runs = collect_runs(store)
    assert all(run.privacy == {} for run in runs)  # the store keeps evaluate's files only
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    for stage, data in _privacy_metrics(0.1, 0.3, passed=True, auc=0.5).items():
        (metrics_dir / f"{stage}.json").write_text(json.dumps(data))
    (metrics_dir / "evaluate.json").write_text((store / "placeholder" / "seed-13" /
                                                "evaluate.json").read_text())  # fmt: skip
    privacy = privacy_section(runs, metrics_dir)
    assert list(privacy["variants"]) == ["placeholder"]
    assert privacy["source"].startswith(f"{metrics_dir}/ in this workspace: the pipeline's last")
    table = report_markdown({**summarize(runs, resamples=50), "privacy": privacy})
    assert f"Privacy (from {metrics_dir}/ in this workspace" in table
    rows = {line.split(" | ")[0]: line for line in _first_table(table.partition("Privacy")[2])}
    assert rows["| placeholder"].startswith("| placeholder | 0.400 (0.100 + 0.300) vs 5 | passed |")
    assert rows["| oracle"].endswith("| – | – | – | – | – | – | – | – |")  # no figures of its own
    assert privacy_section(runs, tmp_path / "none") == {
        "source": privacy_section(runs, tmp_path / "none")["source"],
        "variants": {},
    }
    assert "Privacy (from" not in report_markdown({**summarize(runs, resamples=50),
                                                   "privacy": privacy_section(runs, tmp_path)})  # fmt: skip


def test_a_malformed_workspace_metrics_file_is_named(store: Path, tmp_path: Path) -> None:
    (tmp_path / "gate.json").write_text("{")
    with pytest.raises(InputError, match="gate.json: not a JSON metrics file"):
        privacy_section(collect_runs(store), tmp_path)


def test_the_utility_plot_rows_are_the_adapter_scores_with_the_base_beside() -> None:
    metrics = {
        "variant": "placeholder",
        "adapter": {
            "summary.rouge1": 0.25,
            "n_examples": {"summary": 2},
            "perplexity_raw": 20.5,
            "dialogsum.summary.rouge1": 0.125,
            "dialogsum.perplexity_raw": 13.0,
        },
        "base": {"summary.rouge1": 0.125},
    }
    assert utility_csv(metrics).splitlines() == [
        "metric,adapter,base",
        "summary.rouge1,0.25,0.125",
        "dialogsum.summary.rouge1,0.125,",
    ]
