"""A training run's checkpoints: resumed when a killed run is run again with the same config
and data, discarded otherwise, removed once the adapter is saved."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components.train.params import TrainParams

logger = logging.getLogger(__name__)


def fingerprint(config: TrainParams, records: Iterable[Any]) -> str:
    """What a run's checkpoints are resumed by: the sha256 of its params and of its training
    records (each as JSON, in order); another config or other data is another run."""
    digest = hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode())
    for record in records:
        digest.update(json.dumps(record).encode())
    return digest.hexdigest()


def world_checkpoint(work_dir: Path, fingerprint: str) -> Path | None:
    """:func:`resumable_checkpoint`, decided by rank 0 alone and sent to every rank.

    The ranks share ``work_dir``: were each to decide, one could clear the folder while
    another read it. Without a process group (a plain run) this process decides.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return resumable_checkpoint(work_dir, fingerprint)
    decision: list[str | None] = [None]
    if dist.get_rank() == 0:
        found = resumable_checkpoint(work_dir, fingerprint)
        decision = [str(found) if found else None]
    dist.broadcast_object_list(decision, src=0)
    return Path(decision[0]) if decision[0] else None


def resumable_checkpoint(work_dir: Path, fingerprint: str) -> Path | None:
    """The newest checkpoint in ``work_dir`` if it was made for ``fingerprint`` and its run
    had not finished; otherwise the work dir is cleared for a fresh run and None is returned.

    A finished run's checkpoint (at ``max_steps``, or stopped early) is left by a stage
    killed between its last checkpoint and saving the adapter (a finished run removes its
    checkpoints). Resuming it would train a step past the end; loading its weights instead
    would have to redo what the Trainer does at the end (load the best checkpoint, gather
    ZeRO-3 shards) and report figures of a run this process did not make. So the run is
    trained afresh: seeded, it gives the same adapter and metrics on CPU, and the case is
    rare (the window is the seconds it takes to save an adapter).
    """
    stamp = work_dir / "fingerprint"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == fingerprint:
        checkpoints = sorted(work_dir.glob("checkpoint-*"), key=checkpoint_step)
        complete = [c for c in checkpoints if (c / "trainer_state.json").is_file()]
        if not complete or not _finished(complete[-1]):
            return complete[-1] if complete else None
        logger.info("%s is the end of a finished run: training afresh", complete[-1])
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    stamp.write_text(fingerprint, encoding="utf-8")
    return None


def _finished(checkpoint: Path) -> bool:
    """Whether the checkpoint's run had ended: at its ``max_steps``, or told to stop (early
    stopping saves the checkpoint of the evaluation that stopped it)."""
    state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    control = state.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {})
    return bool(
        state.get("global_step", 0) >= state.get("max_steps", 0) > 0
        or control.get("should_training_stop")
    )


def checkpoint_step(path: Path) -> int:
    return int(path.name.rsplit("-", 1)[-1])


def remove_checkpoints(work_dir: Path) -> None:
    """Remove a finished run's checkpoints: they exist to recover from a kill, not to cache
    results (DVC caches the adapter), and a re-run must not resume from them."""
    for checkpoint in work_dir.glob("checkpoint-*"):
        shutil.rmtree(checkpoint)
