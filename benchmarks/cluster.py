"""`python -m benchmarks.cluster` (and `make bench`): anonymize on a Dask cluster against one
process, on this machine.

- throughput: in-process, a LocalCluster of 1 worker and of 2, on the same generated corpus,
  start-up (cluster, detector per worker) included, so the corpus is sized to amortize it;
- memory: each worker's peak RSS as the corpus grows (the parts bound it, not the corpus);
- merge: the client's sequential copy of the parts into the output, in MB/s, the one step of a
  run that does not spread over workers.

Each part writes its own benchmarks/results/cluster_<part>.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the offline environment and the checkout, as the detection benchmark has them
from benchmarks.detection_quality import REPO
from benchmarks.results import write_result

PARTS = ("throughput", "memory", "merge")


def write_corpus(path: Path, n: int, *, seed: int) -> Path:
    from components.ingest.generate import generate_corpus

    with path.open("w", encoding="utf-8") as handle:
        for conversation in generate_corpus(n, seed=seed):
            handle.write(json.dumps(conversation.to_record(), ensure_ascii=False) + "\n")
    return path


def anonymize_seconds(corpus: Path, out: Path, *, cluster: str | None, workers: int) -> float:
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.stage import anonymize_file

    config = AnonymizeConfig(cluster=cluster, workers=workers)
    started = time.perf_counter()
    anonymize_file(
        config,
        REPO,
        input_path=corpus,
        output_path=out / "corpus.jsonl",
        spans_path=out / "spans.jsonl",
    )
    return time.perf_counter() - started


def bench_throughput(folder: Path, n: int) -> dict[str, Any]:
    corpus = write_corpus(folder / f"throughput-{n}.jsonl", n, seed=7)
    runs = {
        "in_process": (None, 1),
        "local_1_worker": ("local", 1),
        "local_2_workers": ("local", 2),
    }
    result: dict[str, Any] = {"n_conversations": n, "corpus_mb": _mb(corpus)}
    outputs = {}
    for name, (cluster, workers) in runs.items():
        out = folder / name
        seconds = anonymize_seconds(corpus, out, cluster=cluster, workers=workers)
        result[f"{name}_seconds"] = round(seconds, 1)
        result[f"{name}_conversations_per_s"] = round(n / seconds, 2)
        outputs[name] = (out / "corpus.jsonl").read_bytes()
    result["identical_outputs"] = len(set(outputs.values())) == 1
    rate = {name: result[f"{name}_conversations_per_s"] for name in runs}
    result["speedup_2_workers_vs_in_process"] = round(
        rate["local_2_workers"] / rate["in_process"], 3
    )
    result["overhead_1_worker_vs_in_process"] = round(
        1 - rate["local_1_worker"] / rate["in_process"], 3
    )
    return result


def bench_memory(folder: Path, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Each worker's peak RSS (a fresh 2-worker cluster per size) and the client's."""
    from distributed import Client, LocalCluster

    result: dict[str, Any] = {}
    for n in sizes:
        corpus = write_corpus(folder / f"memory-{n}.jsonl", n, seed=n)
        with (
            LocalCluster(
                n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
            ) as local,
            Client(local) as client,
        ):
            seconds = anonymize_seconds(
                corpus, folder / f"m{n}", cluster=local.scheduler_address, workers=2
            )
            peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        result[str(n)] = {
            "corpus_mb": _mb(corpus),
            "seconds": round(seconds, 1),
            "conversations_per_s": round(n / seconds, 2),
            "worker_peak_rss_mb": sorted(round(kb / 1024, 1) for kb in peaks.values()),
            "client_peak_rss_mb_so_far": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
            ),
        }
        shutil.rmtree(folder / f"m{n}")
    return result


def bench_merge(folder: Path, corpus: Path, *, parts: int = 64) -> dict[str, float]:
    """The merge alone: ``parts`` files of a corpus copied into one, in MB/s."""
    from components.core.cluster import Part, merge_parts
    from components.core.jsonio import ByteRange

    lines = corpus.read_bytes().splitlines(keepends=True)
    data = b"".join(lines * 8)  # a bigger file, so the copy is not all start-up
    step = len(data) // parts + 1
    pieces = [Part(i, corpus, "", ByteRange(0, 0, 1), folder) for i in range(parts)]
    for i, part in enumerate(pieces):
        part.output(".x").write_bytes(data[i * step : (i + 1) * step])
    target = folder / "merged.jsonl"
    started = time.perf_counter()
    merge_parts(pieces, ".x", output=target)
    seconds = time.perf_counter() - started
    assert target.read_bytes() == data
    return {"mb": round(len(data) / 2**20, 1), "mb_per_s": round(len(data) / 2**20 / seconds, 1)}


def _mb(path: Path) -> float:
    return round(path.stat().st_size / 2**20, 2)


def run(n: int, sizes: tuple[int, ...], *, parts: set[str]) -> dict[str, Any]:
    """The benchmarks named in ``parts``, each written as ``cluster_<part>`` as it ends."""
    benches: dict[str, Callable[[Path], dict[str, Any]]] = {
        "throughput": lambda folder: bench_throughput(folder, n),
        "memory": lambda folder: bench_memory(folder, sizes),
        "merge": lambda folder: bench_merge(
            folder, write_corpus(folder / "merge.jsonl", min(n, 2000), seed=7)
        ),
    }
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for part in (p for p in PARTS if p in parts):
            results[part] = benches[part](Path(tmp))
            write_result(f"cluster_{part}", results[part])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=4000, help="throughput corpus")
    parser.add_argument("--sizes", default="200,2000,20000", help="memory corpora")
    parser.add_argument("--only", default=",".join(PARTS), help="which to run")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    results = run(args.conversations, sizes, parts=set(args.only.split(",")))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
