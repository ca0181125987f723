"""Privacy-preserving summaries (docs: Private summaries): the base model and adapters trained
five ways, each asked for a privacy-preserving summary of held-out calls and scored by the
offline judge, with bootstrap intervals over conversations.

    python -m benchmarks.private_summary [--rounds 12] [--heldout-rounds 3] [--steps 40]

The corpus is the generated sensitivity corpus (``ingest.sensitive_conversations``): one
call per setting per round, the last ``--heldout-rounds`` rounds held out, so every setting
is scored on the same number of calls. The training calls are anonymized as the pipeline
anonymizes them (the entity detector, placeholders); the held-out calls are scored raw, as
the evaluate stage scores them. Each variant trains with the train stage's own functions
(``train_lora``, ``train_preference``) from the bundled SmolLM2 base, one seed
(``--seed``); the intervals are over held-out conversations, not seeds.

Variants: the base model zero-shot; SFT on all summaries (the normal summary task and the
private one); SFT only-good (both tasks answered with the private summary); the dual output
(normal then private summary in one answer, judged on its private part); DPO and ORPO on
(private, leaking) pairs. Writes benchmarks/results/private_summary.json and prints the
table; never text.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.detection_transforms import REPO
from benchmarks.results import write_result

VARIANTS: dict[str, dict[str, Any]] = {
    "SFT, all summaries": {"tasks": ["summary", "private_summary"]},
    "SFT, only good": {"tasks": ["summary", "private_summary"], "only_good": True},
    "dual output": {"tasks": ["dual_summary"]},
    "DPO": {"tasks": ["private_summary"], "method": "dpo"},
    "ORPO": {"tasks": ["private_summary"], "method": "orpo"},
}
SCORES = ("privacy", "completeness", "acceptable", "rouge1")


def anonymized(conversations: Sequence[Any]) -> list[Any]:
    """The calls as the anonymize stage writes them by default (entities, placeholders)."""
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.factory import anonymization_policy, build_detector

    config = AnonymizeConfig()
    detector = build_detector(config, REPO)
    return [
        c
        for c, _ in anonymize_corpus(
            conversations, detector, policy=anonymization_policy(config, REPO)
        )
    ]


def scored(model: Any, tokenizer: Any, *, heldout: Sequence[Any], task: str) -> dict[str, Any]:
    """Every held-out call's scores for ``task``, and the setting of each."""
    from components.evaluate.private_summary import conversation_setting
    from components.evaluate.utility import evaluate_utility

    result = evaluate_utility(
        model,
        tokenizer,
        heldout=heldout,
        label_sets={},
        max_new_tokens=64,
        max_prompt_tokens=640,
        tasks=[task],
    )
    return {
        c.id: {
            "setting": conversation_setting(c),
            **{k: result.per_conversation[c.id].scores[f"{task}.{k}"] for k in SCORES},
        }
        for c in heldout
    }


def table(per_variant: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each variant's mean score with its 95% bootstrap interval, overall and per setting."""
    from components.evaluate.intervals import bootstrap_interval

    def interval(rows: dict[str, Any], key: str) -> list[float]:
        found = bootstrap_interval({cid: (float(r[key]), 1.0) for cid, r in rows.items()})
        return [round(found.estimate, 3), round(found.low, 3), round(found.high, 3)]

    out: dict[str, Any] = {}
    for name, rows in per_variant.items():
        settings = sorted({r["setting"] for r in rows.values()})
        out[name] = {
            "overall": {key: interval(rows, key) for key in SCORES},
            "by_setting": {
                s: {
                    key: round(
                        sum(r[key] for r in rows.values() if r["setting"] == s)
                        / sum(1 for r in rows.values() if r["setting"] == s),
                        3,
                    )
                    for key in ("privacy", "completeness", "acceptable")
                }
                for s in settings
            },
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=12, help="calls per setting")
    parser.add_argument("--heldout-rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()
    from components.core import paths
    from components.ingest import SETTINGS, generate_sensitive_corpus
    from components.train import load_adapter, load_base
    from components.train.config import TrainConfig
    from components.train.methods import TRAINING_METHODS
    from components.train.training_method import TrainingJob

    base_dir = REPO / paths.BASE_MODEL
    if not (base_dir / "config.json").is_file():
        print(f"benchmarks: {base_dir} is missing (run make run first)", file=sys.stderr)
        return 1
    calls = generate_sensitive_corpus(args.rounds * len(SETTINGS), args.seed)
    cut = (args.rounds - args.heldout_rounds) * len(SETTINGS)
    train, heldout = anonymized(calls[:cut]), calls[cut:]
    per_variant: dict[str, dict[str, Any]] = {}
    timing: dict[str, float] = {}
    start = time.perf_counter()
    model, tokenizer = load_base(base_dir)
    per_variant["base, zero-shot"] = scored(
        model, tokenizer, heldout=heldout, task="private_summary"
    )
    timing["base, zero-shot"] = round(time.perf_counter() - start, 1)
    del model
    for name in args.variants:
        spec = VARIANTS[name]
        config = TrainConfig(max_steps=args.steps, seed=args.seed, eval_fraction=0.0, **spec)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            adapter, work = Path(tmp) / "adapter", Path(tmp) / "work"
            TRAINING_METHODS[config.method].train(
                TrainingJob(base_dir, train, config, adapter, work)
            )
            model, tokenizer = load_adapter(base_dir, adapter)
            task = "dual_summary" if "dual_summary" in config.tasks else "private_summary"
            per_variant[name] = scored(model, tokenizer, heldout=heldout, task=task)
            del model
        timing[name] = round(time.perf_counter() - start, 1)
        print(f"{name}: {timing[name]} s", file=sys.stderr)
    results = {
        "train_calls": len(train),
        "heldout_calls": len(heldout),
        "steps": args.steps,
        "seed": args.seed,
        "seconds": timing,
        "variants": table(per_variant),
    }
    write_result("private_summary", results)
    _print_table(results["variants"])
    return 0


def _print_table(variants: dict[str, Any]) -> None:
    """Each variant's overall figures with their intervals, as a markdown table."""
    print("| model | Privacy | Completeness | acceptable | ROUGE-1 (private ref.) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, row in variants.items():
        cells = [f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for v in row["overall"].values()]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
