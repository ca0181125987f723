"""The utility pack (what the profile's runs read, in one private folder) and a run made from
it without DVC or MLflow, as on a GPU node."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from components.core.corpus import Conversation, Turn, load_corpus
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl, write_jsonl_atomic
from components.evaluate.config import EvaluateConfig
from components.evaluate.portable import PACK_FILE, make_pack, read_pack, run_from_pack
from components.evaluate.runs import collect_runs
from components.ingest.generate import generate_corpus
from components.train import FragmentsConfig, TrainConfig, corpus_examples
from veiltune.utility_runner import main as runner_main

NAME = "Marjorie"


@pytest.fixture(scope="module")
def corpus() -> list[Conversation]:
    conversations = generate_corpus(6, 13)
    first = conversations[0]  # a name the placeholder corpus replaces, so masking shows
    turn = Turn(first.turns[0].speaker, f"This is {NAME} speaking. {first.turns[0].text}")
    return [replace(first, turns=(turn, *first.turns[1:])), *conversations[1:]]


def _splits(corpus: list[Conversation]) -> dict[str, list[str]]:
    return {"train": [c.id for c in corpus[:4]], "heldout": [c.id for c in corpus[4:]]}


def _anonymized(folder: Path, corpus: list[Conversation]) -> Path:
    """An anonymize output folder in placeholder mode: the planted name as a placeholder."""
    records = []
    for c in corpus:
        turns = tuple(Turn(t.speaker, t.text.replace(NAME, "[PERSON_NAME_1]")) for t in c.turns)
        records.append(replace(c, turns=turns, pi=()).to_record())
    write_jsonl_atomic(folder / "corpus.jsonl", records)
    write_jsonl_atomic(folder / "spans.jsonl", [])
    return folder


def _pack(tmp_path: Path, corpus: list[Conversation]) -> Path:
    anonymized = _anonymized(tmp_path / "anonymized", corpus)
    config = EvaluateConfig(max_conversations=1, include_base=False)
    fragments = FragmentsConfig(chunks_per_example=2)  # 4 training conversations
    train = TrainConfig(
        max_steps=1, save_steps=1, batch_size=1, max_seq_length=256, fragments=fragments
    )
    make_pack(
        tmp_path / "pack",
        corpus,
        splits=_splits(corpus),
        anonymized={"placeholder": anonymized},
        train=train,
        evaluate=config,
    )
    return tmp_path / "pack"


def test_a_pack_holds_each_variants_training_split_and_the_raw_heldout(
    tmp_path: Path, corpus: list[Conversation]
) -> None:
    folder = _pack(tmp_path, corpus)
    pack = read_pack(folder)
    assert sorted(pack.variants) == [
        "fragmented",
        "fragmented-raw",
        "masked",
        "masked-no-loss",
        "oracle",
        "placeholder",
    ]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # raw text: private like data/raw
    for item in folder.rglob("*"):  # 0644 files before 2026-11-27
        assert stat.S_IMODE(item.stat().st_mode) == (0o700 if item.is_dir() else 0o600), item
    oracle = pack.training_conversations("oracle")
    assert [c.id for c in oracle] == _splits(corpus)["train"]
    assert NAME in oracle[0].turns[0].text
    placeholder = pack.training_conversations("placeholder")[0].turns[0].text
    masked = pack.training_conversations("masked")[0].turns[0].text
    assert "[PERSON_NAME_1]" in placeholder and NAME not in placeholder
    assert "[MASK]" in masked and "[PERSON_NAME_1]" not in masked
    assert [c.id for c in load_corpus(folder / "heldout.jsonl")] == _splits(corpus)["heldout"]
    assert "seed" not in pack.train and pack.train_config(21).seed == 21
    assert pack.train_config(21).max_steps == 1
    # derived variants train on the same files with their own train params
    assert pack.variants["masked-no-loss"] == pack.variants["masked"]
    assert pack.variants["fragmented"] == pack.variants["placeholder"]
    assert pack.variants["fragmented-raw"] == pack.variants["oracle"]
    assert pack.train_config(21, "masked-no-loss").mask_loss_weight == 0
    assert pack.train_config(21, "masked").mask_loss_weight == 1
    fragments = pack.train_config(21, "fragmented-raw")
    assert (fragments.corpus, fragments.fragments.source) == ("fragmented", "raw")
    assert fragments.tasks == ["continuation"] and fragments.max_steps == 1
    assert pack.train_config(21, "placeholder").corpus == "anonymized"
    with pytest.raises(InputError, match="no variant 'surrogate-lm'"):
        pack.training_conversations("surrogate-lm")


def test_a_pack_refuses_a_corpus_of_another_split_or_an_unknown_variant(
    tmp_path: Path, corpus: list[Conversation]
) -> None:
    other = _anonymized(tmp_path / "other", corpus[1:])  # one training conversation short
    train, evaluate = TrainConfig(), EvaluateConfig()
    with pytest.raises(InputError, match=r"other/corpus.jsonl: 3 of the raw corpus's 4"):
        make_pack(
            tmp_path / "p",
            corpus,
            splits=_splits(corpus),
            anonymized={"placeholder": other},
            train=train,
            evaluate=evaluate,
        )
    for derived in ("oracle", "masked-no-loss", "fragmented"):
        with pytest.raises(InputError, match=f"--anonymized {derived}="):
            make_pack(
                tmp_path / "p",
                corpus,
                splits=_splits(corpus),
                anonymized={derived: other},
                train=train,
                evaluate=evaluate,
            )
    with pytest.raises(InputError, match="spans.jsonl: missing"):
        (other / "spans.jsonl").unlink()
        make_pack(
            tmp_path / "p",
            corpus,
            splits=_splits(corpus),
            anonymized={"type": other},
            train=train,
            evaluate=evaluate,
        )
    assert not (tmp_path / "p").exists()  # nothing half-written


def test_the_fragmented_variants_mix_the_chunks_the_pack_carries_without_spacy(
    tmp_path: Path, corpus: list[Conversation], *, monkeypatch: pytest.MonkeyPatch
) -> None:
    pack = read_pack(_pack(tmp_path, corpus))
    assert set(pack.chunks) == {"fragmented", "fragmented-raw"}
    configs = {v: pack.train_config(21, v) for v in pack.chunks}
    parsed = {v: corpus_examples(pack.training_conversations(v), configs[v]) for v in configs}
    monkeypatch.setitem(sys.modules, "spacy", None)  # a GPU node: no spaCy to parse with
    for variant, config in configs.items():
        examples = pack.training_examples(variant, config)
        assert examples == parsed[variant] and examples.train
    for variant, file in pack.chunks.items():  # each from its own corpus: raw, placeholders
        turns = " ".join(t.text for c in pack.training_conversations(variant) for t in c.turns)
        assert all(r["text"] in turns for _, r in iter_jsonl(pack.folder / file))
    assert pack.chunks["fragmented"] != pack.chunks["fragmented-raw"]
    assert pack.training_examples("placeholder", pack.train_config(21)) is None  # its tasks'
    chunks = pack.folder / pack.chunks["fragmented"]
    chunks.write_text('{"conversation_id": "c1", "text": "a bill"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"chunks/placeholder.jsonl:1: not a chunk"):
        pack.training_examples("fragmented", configs["fragmented"])


def test_read_pack_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="pack.json: no such file"):
        read_pack(tmp_path)
    (tmp_path / PACK_FILE).write_text('{"train": {}}', encoding="utf-8")
    with pytest.raises(InputError, match="pack.json: not a utility pack"):
        read_pack(tmp_path)


@pytest.mark.slow
def test_a_run_from_a_pack_lands_in_the_run_store_the_report_reads(
    tmp_path: Path, corpus: list[Conversation], *, base_model_dir: Path
) -> None:
    folder = _pack(tmp_path, corpus)
    store = tmp_path / "store"
    run_folder = run_from_pack(
        read_pack(folder),
        "masked",
        seed=21,
        base_model=base_model_dir,
        store=store,
        work_dir=tmp_path / "work",
    )
    assert run_folder == store / "masked" / "seed-21"
    evaluation = json.loads((run_folder / "evaluate.json").read_text(encoding="utf-8"))
    assert evaluation["runner"] == "portable" and evaluation["train"]["steps"] == 1
    assert evaluation["pack_sha256"] == read_pack(folder).digest
    (run,) = collect_runs(store)
    assert (run.variant, run.seed) == ("masked", 21)
    assert run.records and {r["model"] for r in run.records} == {"adapter"}
    assert {r["id"] for r in run.records} == {corpus[4].id}  # max_conversations: 1
    assert "summary.rouge1" in evaluation["adapter"]
    # The runner skips what the store holds: nothing to do, nothing trained, exit 0.
    argv = [str(folder), "--base-model", str(base_model_dir), "--store", str(store)]
    assert runner_main([*argv, "--variants", "masked", "--seeds", "21"]) == 0
    assert runner_main([*argv, "--variants", "nonesuch", "--seeds", "21"]) == 1


# What a GPU node has (docs/utility.md): torch, transformers, peft, rouge-score, scikit-learn.
# The pipeline's other dependencies must not be imported on the way to a run: one was (faker,
# through the ingest package's generators), and the runner failed on such a node.
NOT_ON_A_GPU_NODE = (
    "faker", "mlflow", "dvc", "prefect", "great_expectations", "presidio_analyzer", "spacy",
    "trl", "deepspeed", "dask", "distributed", "onnxruntime", "google", "pandas", "matplotlib",
)  # fmt: skip
RUN_MODULES = (
    "veiltune.utility_runner",
    "components.evaluate.portable",
    "components.evaluate.utility",
    "components.train",
    "components.train.lora",
    "components.base_model",
)


def test_a_run_from_a_pack_imports_nothing_a_gpu_node_lacks() -> None:
    import subprocess
    import sys

    blocker = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {NOT_ON_A_GPU_NODE!r}:\n"
        "            raise ImportError(f'{name}: not on a GPU node')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for module in {RUN_MODULES!r}:\n"
        "    __import__(module)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", blocker], capture_output=True, text=True, check=False, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]


def test_the_runner_names_a_missing_scorer_before_it_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a)
    )
    code = runner_main([str(tmp_path / "no-pack"), "--base-model", "x", "--store", "y"])
    assert code == 2 and "pip install scikit-learn" in caplog.text
