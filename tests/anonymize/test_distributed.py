"""Anonymize and detect on a real Dask cluster (``anonymize.cluster``): byte for byte the
one-process outputs, a worker killed mid-run recomputed, a malformed record or an
unreachable scheduler one clear error with nothing written, the policy files sent with the
task."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.anonymize import distributed
from components.anonymize.commands import detect
from components.anonymize.config import AnonymizeConfig, NerConfig
from components.anonymize.stage import anonymize_file
from components.core import cluster
from components.core.errors import BackendError, InputError, ParamsError
from components.core.stage import StageContext
from components.ingest.generate import generate_corpus

REPO = Path(__file__).resolve().parents[2]
N_CONVERSATIONS = 30
ON_TWO_WORKERS = AnonymizeConfig(
    batch_size=8, replacement="placeholder", cluster="local", workers=2
)


@pytest.fixture(scope="module")
def shared() -> Iterator[AnonymizeConfig]:
    """The config of a cluster of two worker processes kept for the module (by its
    scheduler's address, as `anonymize.cluster: tcp://...` names an existing cluster): each
    worker builds its detector once for every test that runs there. The byte-for-byte test
    starts its own `local` cluster; the worker-kill test, last, kills one of these workers."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as local:
        yield AnonymizeConfig(
            batch_size=8, replacement="placeholder", cluster=local.scheduler_address, workers=2
        )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("raw") / "corpus.jsonl"
    records = [c.to_record() for c in generate_corpus(N_CONVERSATIONS, seed=11)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of a few conversations each, so every worker gets several."""
    monkeypatch.setattr(cluster, "MIN_PART_BYTES", 4096)


def _outputs(folder: Path) -> tuple[bytes, bytes]:
    return (folder / "corpus.jsonl").read_bytes(), (folder / "spans.jsonl").read_bytes()


def _anonymize(config: AnonymizeConfig, corpus: Path, *, out: Path) -> dict[str, object]:
    return anonymize_file(
        config,
        REPO,
        input_path=corpus,
        output_path=out / "corpus.jsonl",
        spans_path=out / "spans.jsonl",
    )


@pytest.fixture(scope="module")
def in_process(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    out = tmp_path_factory.mktemp("single")
    _anonymize(AnonymizeConfig(batch_size=8, replacement="placeholder"), corpus, out=out)
    return _outputs(out)


@pytest.mark.slow
def test_a_local_cluster_writes_the_one_process_outputs_byte_for_byte(
    corpus: Path, in_process: tuple[bytes, bytes], *, tmp_path: Path, small_parts: None
) -> None:
    metrics = _anonymize(ON_TWO_WORKERS, corpus, out=tmp_path)
    assert _outputs(tmp_path) == in_process
    assert metrics["n_conversations"] == N_CONVERSATIONS and metrics["workers"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "spans.jsonl"]


@pytest.mark.slow
def test_detect_on_a_cluster_writes_what_detect_writes_in_one_process(
    corpus: Path, tmp_path: Path, *, small_parts: None, shared: AnonymizeConfig
) -> None:
    context = StageContext(REPO / "params.yaml", {}, {})
    config = AnonymizeConfig(batch_size=8, replacement="placeholder")
    assert (
        detect(config, context, input_path=corpus, output_path=tmp_path / "one.jsonl")
        == N_CONVERSATIONS
    )
    assert (
        detect(shared, context, input_path=corpus, output_path=tmp_path / "many.jsonl")
        == N_CONVERSATIONS
    )
    assert (tmp_path / "many.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


@pytest.mark.slow
def test_evaluate_detection_on_a_cluster_scores_what_one_process_scores(
    shared: AnonymizeConfig,
) -> None:
    from components.anonymize.distributed import detect_groups_on_cluster
    from components.anonymize.evaluation.datasets import load_labelled
    from components.anonymize.evaluation.run import (
        conversation_groups,
        evaluate_detection,
        score_detection,
    )
    from components.anonymize.factory import anonymization_policy, build_detector

    items = load_labelled("embedded", None, limit=120)
    config = AnonymizeConfig(batch_size=8, replacement="placeholder")
    detector, policy = build_detector(config, REPO), anonymization_policy(config, REPO)
    one, one_sample = evaluate_detection(
        items, detector, policy=policy, batch_size=8, sample_size=5
    )
    groups = conversation_groups(items)
    detected = detect_groups_on_cluster(shared, REPO, groups=groups)
    many, many_sample = score_detection(items, groups, detected=detected, sample_size=5)
    timing = ("seconds", "chars_per_second")
    assert {k: v for k, v in many.items() if k not in timing} == {
        k: v for k, v in one.items() if k not in timing
    }
    assert many_sample == one_sample
    assert one["n_texts"] == 120 and one["char_recall"] > 0


@pytest.mark.slow
def test_distributed_logs_its_warnings_only_while_a_cluster_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # distributed sets its logger to INFO when imported, over the CLI's policy (other
    # libraries' warnings only; everything with -v, which sets the root logger to DEBUG)
    quiet = logging.getLogger("distributed").level
    with cluster.dask_client(cluster.LOCAL, 1, timeout_s=30):
        assert not logging.getLogger("distributed.scheduler").isEnabledFor(logging.INFO)
        assert logging.getLogger("distributed.nanny").isEnabledFor(logging.WARNING)
    assert [r for r in caplog.records if r.name.startswith("distributed")] == []
    assert logging.getLogger("distributed").level == quiet  # as it was, afterwards


@pytest.mark.slow
def test_a_task_that_kills_its_workers_is_one_error() -> None:
    import dask

    # os._exit(3) on a worker: it dies running the task, as an out-of-memory kill does
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        cluster.dask_client(cluster.LOCAL, 1, timeout_s=30) as client,
        pytest.raises(BackendError, match=r"^the Dask cluster: .*all those workers died"),
    ):
        cluster.run_parts(
            client, os._exit, parts=[3], arguments=[], description="dying", total=None
        )


@pytest.mark.slow
def test_a_malformed_record_in_a_later_part_is_one_error_and_nothing_is_written(
    corpus: Path, tmp_path: Path, *, small_parts: None, shared: AnonymizeConfig
) -> None:
    lines = corpus.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join([*lines[:-3], '{"id": "x", "turns": [\n', *lines[-3:]]))
    out = tmp_path / "out"
    with pytest.raises(InputError, match=rf"^{bad}:{len(lines) - 2}: malformed JSON"):
        _anonymize(shared, bad, out=out)
    assert not out.exists() or not list(out.iterdir())  # no outputs, no parts left


@pytest.mark.slow
def test_a_duplicate_id_across_parts_is_named_by_its_line(
    corpus: Path, tmp_path: Path, *, small_parts: None, shared: AnonymizeConfig
) -> None:
    lines = corpus.read_text().splitlines(keepends=True)
    duplicate = tmp_path / "duplicate.jsonl"
    duplicate.write_text("".join([*lines, lines[0]]))
    first_id = json.loads(lines[0])["id"]
    with pytest.raises(InputError, match=rf"{len(lines) + 1}: duplicate id '{first_id}'"):
        _anonymize(shared, duplicate, out=tmp_path / "out")
    assert not (tmp_path / "out" / "corpus.jsonl").exists()


@pytest.mark.slow
def test_the_policy_files_travel_with_the_task_not_on_the_workers_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, shared: AnonymizeConfig
) -> None:
    """A project whose exclusions keep a made-up word that the shipped policy redacts; its
    policy folder is removed after the client reads it and before the cluster starts, and
    the workers still apply it."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "veiltune" / "policy", project / "veiltune" / "policy")
    exclusions = project / "veiltune" / "policy" / "exclusions" / "person_name.txt"
    exclusions.write_text(exclusions.read_text() + "\nquelbrin\n")
    records = [c.to_record() for c in generate_corpus(12, seed=5)]
    records[0]["turns"][0]["text"] += " The reference word is quelbrin."
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    config = AnonymizeConfig(batch_size=4, replacement="placeholder")
    one = anonymize_file(
        config,
        project,
        input_path=corpus,
        output_path=tmp_path / "one.jsonl",
        spans_path=tmp_path / "one.spans",
    )
    assert "reference word is quelbrin." in (tmp_path / "one.jsonl").read_text()
    cluster_client = distributed.dask_client

    @contextlib.contextmanager
    def policy_gone_then_cluster(*args: object, **kwargs: object) -> Iterator[object]:
        shutil.rmtree(project / "veiltune")
        with cluster_client(*args, **kwargs) as client:  # type: ignore[arg-type]
            yield client

    monkeypatch.setattr(distributed, "dask_client", policy_gone_then_cluster)
    many = anonymize_file(
        replace(config, cluster=shared.cluster, workers=2),
        project,
        input_path=corpus,
        output_path=tmp_path / "many.jsonl",
        spans_path=tmp_path / "many.spans",
    )
    assert not (project / "veiltune").exists()
    assert (tmp_path / "many.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert (tmp_path / "many.spans").read_bytes() == (tmp_path / "one.spans").read_bytes()
    assert many["n_conversations"] == one["n_conversations"] == 12


def test_the_policy_files_are_those_params_name_each_once_and_can_be_renamed() -> None:
    config = AnonymizeConfig(
        detectors=["entities", "allow_list"],
        calibration=None,
        exclusions={"PERSON_NAME": "a.txt"},
        dictionaries={"PERSON_NAME": "a.txt", "LOCATION": "b.txt"},
        pi_label_keys="k.yaml",
        recognizers_file="r.yaml",
    )
    labels = config.ner.labels  # the transformer NER's label mapping, on by default
    expected = ["a.txt", "b.txt", "k.yaml", labels, config.allow_list, "r.yaml"]
    assert config.policy_files() == expected
    assert "veiltune/policy/allow_list.txt" not in AnonymizeConfig().policy_files()
    moved = config.with_policy_files(
        {
            "a.txt": "/w/0-a.txt",
            "k.yaml": "/w/2-k.yaml",
            labels: "/w/3-labels",
            config.allow_list: "/w/4-allow",
            "r.yaml": "/w/5-r.yaml",
        }
    )
    assert moved.exclusions == {"PERSON_NAME": "/w/0-a.txt"}
    assert moved.dictionaries == {"PERSON_NAME": "/w/0-a.txt", "LOCATION": "b.txt"}
    assert moved.pi_label_keys == "/w/2-k.yaml" and moved.ner.labels == "/w/3-labels"
    assert moved.allow_list == "/w/4-allow" and moved.calibration is None
    assert moved.recognizers_file == "/w/5-r.yaml"


def test_an_engine_shows_neither_the_secret_nor_the_policy_contents_in_a_task_log(
    tmp_path: Path,
) -> None:
    import pickle

    from components.anonymize.surrogates import SurrogateKey

    names = tmp_path / "names.txt"
    names.write_text("Quelbrin Ostrava\n")
    config = AnonymizeConfig(
        calibration=None,
        exclusions={},
        dictionaries={"PERSON_NAME": "names.txt"},
        pi_label_keys=None,
        ner=NerConfig(model=None),
    )
    engine = distributed.engine_for(config, tmp_path, key=SurrogateKey("s3cr3t-salt"))
    assert engine.files == (("names.txt", b"Quelbrin Ostrava\n"),)
    assert "Quelbrin" not in repr(engine) and "s3cr3t" not in repr(engine)
    assert pickle.loads(pickle.dumps(engine)).token == engine.token


def test_the_engine_carries_the_base_model_the_stage_names(
    tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers load the base model from the stage's workspace, not params' folder: the
    engine carries that folder whole, and an engine of another folder is another engine."""
    config = AnonymizeConfig(
        calibration=None,
        exclusions={},
        dictionaries={},
        pi_label_keys=None,
        ner=NerConfig(model=None),
    )
    (tmp_path / "workspace" / "models" / "base").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    engine = distributed.engine_for(
        config, tmp_path / "params", key=None, base_model=Path("workspace/models/base")
    )
    assert engine.base_model == tmp_path.resolve() / "workspace" / "models" / "base"
    assert engine.token != distributed.engine_for(config, tmp_path / "params", key=None).token


def test_a_missing_policy_file_is_named_before_a_cluster_is_reached(
    corpus: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere.txt"
    config = AnonymizeConfig(
        cluster="tcp://127.0.0.1:9", cluster_timeout_s=2, dictionaries={"PERSON_NAME": str(missing)}
    )
    with pytest.raises(InputError, match=rf"^{missing}: no such term list"):
        _anonymize(config, corpus, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_is_named_within_the_timeout(corpus: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(cluster="tcp://127.0.0.1:9", cluster_timeout_s=2)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"Dask scheduler at tcp://127\.0\.0\.1:9 within 2 s"):
        _anonymize(config, corpus, out=tmp_path / "out")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("value", ["cluster", "tcp://", "tcp://host", "http://host:8786", ""])
def test_a_bad_cluster_names_the_key(value: str) -> None:
    with pytest.raises(ParamsError, match=r"anonymize\.cluster"):
        AnonymizeConfig(cluster=value)


def test_a_share_of_texts_shows_its_size_not_its_texts_in_a_task_log() -> None:
    import pickle

    parts = cluster.shares(["Call me at 555-0100", "I'm Ann Lee"] * 5, workers=2)
    assert [len(p) for p in parts] == [2, 2, 2, 2, 2]
    assert repr(parts[0]) == "<share of 2>" and "Ann" not in repr(parts)
    assert pickle.loads(pickle.dumps(parts[0])) == ["Call me at 555-0100", "I'm Ann Lee"]


@pytest.fixture
def client_of_shared(shared: AnonymizeConfig) -> Iterator[Any]:
    """A client of the shared cluster, connected before the test's logs are captured."""
    from distributed import Client

    with Client(shared.cluster) as client:
        yield client


@pytest.mark.slow
def test_a_worker_killed_mid_run_has_its_parts_recomputed(
    corpus: Path,
    in_process: tuple[bytes, bytes],
    *,
    tmp_path: Path,
    small_parts: None,
    shared: AnonymizeConfig,
    client_of_shared: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Last in the module: it kills one of the shared cluster's workers (its nanny starts
    another, which builds its detector again)."""
    scheduler = client_of_shared
    pids = scheduler.run(os.getpid)
    killed: list[int] = []

    def kill_a_busy_worker() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            busy = [w for w, tasks in scheduler.processing().items() if tasks and w in pids]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(pids[busy[0]])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    _anonymize(shared, corpus, out=tmp_path)
    killer.join(timeout=5)
    assert killed, "no worker was busy to kill"
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0], 0)  # it died mid-run...
    assert _outputs(tmp_path) == in_process  # ...and its parts were done again, whole
    # A recovered worker is a warning line (and one more when the parts it had finished
    # are recomputed), no traceback: none of distributed's INFO lines (every connection and
    # worker, and a traceback for a connection closed at shutdown).
    # The scheduler here runs in the test's process (a user's runs elsewhere): its own INFO
    # line for the client closing may land while the run's log levels hold, or after.
    noise = [
        r
        for r in caplog.records
        if r.name.startswith("distributed") and r.name != "distributed.scheduler"
    ]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in noise), noise
    assert "Restarting worker (status=Status.running)" in [r.getMessage() for r in noise]
    assert len(noise) <= 2
