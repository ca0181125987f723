"""Streaming anonymization: several worker processes give exactly the one-process output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.anonymize import stream
from components.anonymize.config import AnonymizeConfig
from components.anonymize.stream import AnonymizationTally, anonymize_stream
from components.core.errors import InputError
from components.ingest.generate import generate_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_workers_give_the_same_output_in_the_same_order() -> None:
    corpus = generate_corpus(24, seed=5)
    config = AnonymizeConfig(batch_size=4, replacement="placeholder")
    single = [
        (o.id, a.to_record(), [r.to_record() for r in rs])
        for o, (a, rs) in anonymize_stream(corpus, config, base_dir=REPO, workers=1)
    ]
    double = [
        (o.id, a.to_record(), [r.to_record() for r in rs])
        for o, (a, rs) in anonymize_stream(iter(corpus), config, base_dir=REPO, workers=2)
    ]
    assert [i for i, _, _ in single] == [c.id for c in corpus]
    assert double == single


def test_tally_counts_without_keeping_text() -> None:
    tally = AnonymizationTally()
    (conversation,) = generate_corpus(1, seed=1)
    tally.add(conversation, [])
    metrics = tally.to_metrics(seconds=2.0, workers=1)
    assert metrics["n_conversations"] == 1 and metrics["n_replacements"] == 0
    assert metrics["chars_per_second"] > 0


def _params_folder(folder: Path, config: AnonymizeConfig) -> Path:
    """A params folder: the policy files ``config`` names, and no ``models/base``."""
    for name in config.policy_files():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, folder / name)
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_without_the_language_model_the_stream_says_where_it_looked_before_reading(
    tmp_path: Path, *, workers: int
) -> None:
    """Without the folder the stage names, the stream looks beside params and names that
    folder before any input is read: with workers too, where the pool would otherwise start
    one failing worker after another."""
    config = AnonymizeConfig(
        detectors=["lm_probability"], replacement="placeholder", workers=workers
    )
    params = _params_folder(tmp_path / "params", config)
    with pytest.raises(InputError, match=f"{params / 'models' / 'base'}: no such model"):
        anonymize_stream(iter(generate_corpus(2, seed=3)), config, base_dir=params, workers=workers)


def test_the_language_model_is_the_one_the_stage_names_not_one_beside_params(
    base_model_dir: Path, tmp_path: Path
) -> None:
    """The anonymize stage names the base model in its workspace, which need not be
    params.yaml's folder."""
    config = AnonymizeConfig(detectors=["lm_probability"], replacement="placeholder", batch_size=2)
    params = _params_folder(tmp_path / "params", config)
    corpus = generate_corpus(4, seed=3)
    anonymized = list(
        anonymize_stream(iter(corpus), config, base_dir=params, base_model=base_model_dir)
    )
    assert [o.id for o, _ in anonymized] == [c.id for c in corpus]
    assert any(replacements for _, (_, replacements) in anonymized)


def test_a_worker_that_cannot_build_its_detector_fails_the_stream_and_does_not_hang(
    tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails in a worker's initializer fails its first batch (a worker that died
    there would be replaced by one that fails the same way, and the stream would wait); the
    worker builds with the base model the stream was given."""

    def unbuildable(config: AnonymizeConfig, base_dir: Path, *, base_model: Path) -> None:
        raise InputError(f"no detector with {base_model}")

    config = AnonymizeConfig(replacement="placeholder", batch_size=2, workers=2)
    monkeypatch.setattr(stream.factory, "build_detector", unbuildable)  # the workers fork
    with pytest.raises(InputError, match=f"no detector with {tmp_path}"):
        list(
            anonymize_stream(
                generate_corpus(4, seed=3), config, base_dir=REPO, workers=2, base_model=tmp_path
            )
        )
