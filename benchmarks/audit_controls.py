"""The audits' power on the real model (docs: Leakage audits, Results): three LoRA adapters
on SmolLM2-135M-Instruct, trained alike on one small corpus with planted canaries, one on the
raw text (anonymization off), one on the anonymized text with placeholders, one with
realistic surrogates; every audit run on each. The control is bigger than the pipeline's
default run so that memorization shows at all on a CPU: 12 training conversations seen for
four epochs, LoRA on the attention and MLP projections, the continuation task (the one that
trains on transcript text), canaries planted once, three and six times.

    python -m benchmarks.audit_controls [--seeds 5 6] [--steps 24]

Writes benchmarks/results/audit_controls.json: per seed and adapter, each audit's verdict and
figures; and whether the controls held (the raw adapter flagged, the anonymized ones not).
Tens of minutes on 2 CPU cores per seed; minutes on a GPU. The suite's own control
(tests/audits/test_controls.py) shows each audit able to fail, on a tiny model, in seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.detection_quality import REPO
from benchmarks.results import write_result

REPETITIONS = [1, 3, 6]
CORPUS_SIZE = 20  # 12 train, 8 held out
ADAPTERS = ("raw", "anonymized", "surrogate")


def control_train(steps: int) -> Any:
    from components.train.config import TrainConfig

    return TrainConfig(
        max_steps=steps, learning_rate=2e-3, batch_size=2, max_seq_length=320, lora_r=16,
        lora_alpha=32, save_steps=100_000, eval_fraction=0.0, tasks=["continuation"],
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                        "down_proj"],
    )  # fmt: skip


def control_audit() -> Any:
    from components.audit.config import AuditConfig

    return AuditConfig(
        n_prompts=6, canary_candidates=50, extraction_prefixes=12, mia_conversations=12
    )


def corpora(seed: int, detector: Any) -> tuple[dict[str, list[Any]], Any]:
    """The raw, placeholder and surrogate corpora of one seed, and the audits' inputs."""
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.factory import anonymization_policy
    from components.anonymize.surrogates import SurrogateKey
    from components.audit.runner import AuditInputs
    from components.ingest.canaries import plant_canaries
    from components.ingest.generate import generate_corpus
    from components.ingest.pi_inventory import inventory_entries
    from components.ingest.sources import split_ids

    corpus = generate_corpus(CORPUS_SIZE, seed)
    splits = split_ids([c.id for c in corpus], 0.4, seed=seed)
    corpus, canaries = plant_canaries(
        corpus,
        splits["train"],
        entity_types=["PHONE_NUMBER", "FINANCIAL_ACCOUNT_NUMBER"],
        repetitions=REPETITIONS,
        seed=seed,
    )
    policy = anonymization_policy(AnonymizeConfig(replacement="placeholder"))
    anonymized = [a for a, _ in anonymize_corpus(corpus, detector, policy=policy)]
    inventory = list(inventory_entries(corpus, "salt"))
    key = SurrogateKey("salt", frozenset(e.digest for e in inventory))
    surrogate = anonymization_policy(AnonymizeConfig(replacement="surrogate"), key=key)
    surrogates = [a for a, _ in anonymize_corpus(corpus, detector, policy=surrogate)]
    train = set(splits["train"])
    inputs = AuditInputs(
        train_raw=[c for c in corpus if c.id in train],
        heldout_raw=[c for c in corpus if c.id not in train],
        heldout_anonymized=[c for c in anonymized if c.id not in train],
        canaries=canaries,
        inventory=inventory,
        salt="salt",
    )
    texts = {"raw": corpus, "anonymized": anonymized, "surrogate": surrogates}
    return {name: [c for c in calls if c.id in train] for name, calls in texts.items()}, inputs


def run_seed(seed: int, steps: int, *, base: Path, detector: Any, work: Path) -> dict[str, Any]:
    """Each adapter's audit summary (``metrics/audit.json``'s shape) and run time."""
    from audits.result import audit_summary
    from components.audit.runner import run_audits
    from components.train.adapter import load_adapter
    from components.train.lora import train_lora

    training, inputs = corpora(seed, detector)
    results: dict[str, Any] = {}
    for name in ADAPTERS:
        started = time.monotonic()
        adapter = work / f"{seed}-{name}"
        train_lora(
            base,
            training[name],
            config=control_train(steps),
            output_dir=adapter,
            work_dir=work / f"{seed}-w-{name}",
        )
        model, tokenizer = load_adapter(base, adapter)
        summary = audit_summary(
            run_audits(model, tokenizer, config=control_audit(), inputs=inputs, detector=detector),
            name,
        )
        summary["runtime_s"] = round(time.monotonic() - started, 1)
        results[name] = summary
        print(f"seed {seed} {name}: passed={summary['passed']}", file=sys.stderr)
    return results


def held(results: dict[str, Any]) -> dict[str, bool]:
    """The controls: the raw adapter fails, each anonymized one passes."""
    return {
        "raw_flagged": results["raw"]["passed"] is False,
        **{f"{name}_passed": results[name]["passed"] is True for name in ADAPTERS[1:]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[5])
    parser.add_argument("--steps", type=int, default=24, help="LoRA steps per adapter")
    args = parser.parse_args()
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import build_detector
    from components.base_model.materialize import BUNDLED_SMOLLM2, materialize_base_model

    detector = build_detector(AnonymizeConfig(), REPO)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        materialize_base_model(BUNDLED_SMOLLM2, work / "base")
        by_seed = {
            str(seed): run_seed(seed, args.steps, base=work / "base", detector=detector, work=work)
            for seed in args.seeds
        }
    controls_held = {seed: held(results) for seed, results in by_seed.items()}
    figures = {
        "base_model": "SmolLM2-135M-Instruct (bundled GGUF, de-quantized)",
        "canary_repetitions": REPETITIONS,
        "train": {"steps": args.steps, "conversations": 12, "tasks": ["continuation"]},
        "controls_held": controls_held,
        "by_seed": by_seed,
    }
    print(write_result("audit_controls", figures))
    return 0 if all(all(h.values()) for h in controls_held.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
