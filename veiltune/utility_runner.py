"""The utility profile's runs from a pack, on a machine with only torch, transformers, peft,
rouge-score and scikit-learn (a GPU node):
``python -m veiltune.utility_runner PACK --base-model DIR --store DIR``.

Each variant × seed trains and evaluates in its own process (``--parallel`` at a time: a
135M-parameter model leaves most of a GPU idle), into the run store that ``veiltune
utility-report`` reads; a run the store already holds is skipped, so an interrupted batch
resumes. ``--gguf FILE`` de-quantizes the base model from a GGUF file first, as the
base_model stage does. See ``components/evaluate/portable.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

from components.base_model import convert_gguf
from components.evaluate.portable import read_pack, run_from_pack
from components.evaluate.runs import EVALUATE_FILE, run_folder

logger = logging.getLogger("veiltune.utility_runner")
# What evaluate scores with, beyond torch, transformers and peft: module -> pip name.
SCORERS = {"rouge_score": "rouge-score", "sklearn": "scikit-learn"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m veiltune.utility_runner", description=__doc__)
    parser.add_argument("pack", type=Path, help="a folder `veiltune utility-pack` wrote")
    parser.add_argument("--base-model", type=Path, required=True, help="Hugging Face model folder")
    parser.add_argument("--gguf", type=Path, help="de-quantize this GGUF into --base-model first")
    parser.add_argument("--store", type=Path, required=True, help="run store: DIR/<variant>/seed-N")
    parser.add_argument("--work-dir", type=Path, default=Path(".veiltune/utility-runs"))
    parser.add_argument("--variants", nargs="+", help="default: every variant of the pack")
    parser.add_argument("--seeds", nargs="+", type=int, default=[13, 14])
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads per run")
    return parser


def _one(args: tuple[Path, str, int, Path, Path, Path, int]) -> tuple[str, int, float]:
    pack_dir, variant, seed, base_model, store, work_dir, threads = args
    import torch

    torch.set_num_threads(threads)
    started = time.monotonic()
    run_from_pack(
        read_pack(pack_dir),
        variant,
        seed=seed,
        base_model=base_model,
        store=store,
        work_dir=work_dir,
    )
    return variant, seed, time.monotonic() - started


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    # before minutes of training, not after
    missing = [pip for module, pip in SCORERS.items() if importlib.util.find_spec(module) is None]
    if missing:
        logger.error("evaluate scores with %s: pip install %s", missing, " ".join(missing))
        return 2

    pack = read_pack(args.pack)
    if args.gguf is not None and not (args.base_model / "config.json").is_file():
        logger.info("de-quantizing %s into %s", args.gguf, args.base_model)
        convert_gguf(args.gguf, args.base_model)
    variants = args.variants or list(pack.variants)
    planned = [  # a seed of every variant first: runs cut short leave each variant scored
        (variant, seed)
        for seed in args.seeds
        for variant in variants
        if not (run_folder(args.store, variant, seed=seed) / EVALUATE_FILE).is_file()
    ]
    logger.info("%d runs to do: %s", len(planned), planned)
    jobs = [
        (
            args.pack,
            variant,
            seed,
            args.base_model,
            args.store,
            args.work_dir / f"{variant}-seed-{seed}",
            args.threads,
        )
        for variant, seed in planned
    ]
    failed = 0
    with ProcessPoolExecutor(max(1, args.parallel), mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_one, job): job[1:3] for job in jobs}
        for future in as_completed(futures):
            variant, seed = futures[future]
            try:
                _, _, seconds = future.result()
            except Exception:
                failed += 1
                logger.exception("%s seed %d failed", variant, seed)
            else:
                logger.info("%s seed %d done in %.0f s", variant, seed, seconds)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
