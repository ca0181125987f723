"""DialogSum records as conversations, and ingest with DialogSum on and off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.config import stage_config
from components.core.corpus import Conversation, Turn
from components.core.errors import InputError, ParamsError
from components.ingest.config import DialogSumConfig, IngestConfig
from components.ingest.dialogsum import (
    dialogsum_conversation,
    load_dialogsum,
    read_dialogsum,
    split_by_dataset,
)
from components.ingest.sources import ingest_corpus
from tests.conftest import DIALOGSUM_SAMPLE, REPO_ROOT, SHARED_DATA

DIALOGSUM_FILE = DIALOGSUM_SAMPLE  # the 200 records that ship with veiltune
SHARED_DIALOGSUM = SHARED_DATA / "dialogsum" / "dialogsum.dev.jsonl"  # optional


@pytest.mark.parametrize(
    ("record", "turns", "summary"),
    [
        (
            {
                "fname": "dev_1",
                "dialogue": "#Person1#: Hey Jimmy.\n#Person2#: Sure.",
                "summary": "#Person1# invites Jimmy.",
                "topic": "gym",
            },
            (Turn("Person1", "Hey Jimmy."), Turn("Person2", "Sure.")),
            "Person1 invites Jimmy.",
        ),
        (  # blank lines skipped, a third speaker, tags inside a turn written like speakers
            {
                "fname": 7,
                "dialogue": "#Person1#:Hi.\n\n#Person3#: Ask #Person1#!  \n",
                "summary": " #Person3# greets #Person1#'s friend. ",
            },
            (Turn("Person1", "Hi."), Turn("Person3", "Ask Person1!")),
            "Person3 greets Person1's friend.",
        ),
    ],
)
def test_a_record_becomes_a_conversation(
    record: dict[str, object], turns: tuple[Turn, ...], *, summary: str
) -> None:
    conversation = dialogsum_conversation(record, "f:1")
    assert conversation.id == f"dialogsum-{record['fname']}"
    assert conversation.turns == turns
    assert conversation.context == "dialogue"
    assert conversation.labels == {"summary": summary}
    assert conversation.pi == ()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"dialogue": "#Person1#: Hi.", "summary": "x"}, "f:3: missing or empty key 'fname'"),
        ({"fname": "a", "summary": "x"}, "f:3: missing or empty key 'dialogue'"),
        ({"fname": "a", "dialogue": "#Person1#: Hi."}, "f:3: missing or empty key 'summary'"),
        ({"fname": "a", "dialogue": "#Person1#: Hi.", "summary": "  "}, "key 'summary'"),
        ({"fname": "a", "dialogue": ["#Person1#: Hi."], "summary": "x"}, "key 'dialogue'"),
        (
            {"fname": "a", "dialogue": "\n \n", "summary": "x"},
            "f:3: missing or empty key 'dialogue'",
        ),
        (
            {"fname": "a", "dialogue": "#Person1#: Hi.\nPerson2: Hello.", "summary": "x"},
            "f:3: 'dialogue' line 2 does not start with a '#PersonN#:' speaker tag",
        ),
    ],
)
def test_bad_records_are_named_by_file_and_line(record: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        dialogsum_conversation(record, "f:3")


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _record(fname: str, name: str = "Jimmy") -> dict[str, str]:
    return {
        "fname": fname,
        "dialogue": f"#Person1#: Hey {name}.\n#Person2#: Hi.",
        "summary": f"#Person1# greets {name}.",
    }


def test_reading_stops_at_max_dialogues_and_rejects_bad_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "ds.jsonl", [_record("a"), _record("b"), {"fname": "c"}])
    assert [c.id for c in read_dialogsum(path, 2)] == ["dialogsum-a", "dialogsum-b"]
    with pytest.raises(InputError, match=rf"{path}:3: missing or empty key 'dialogue'"):
        read_dialogsum(path, 3)
    repeated = _write(tmp_path / "twice.jsonl", [_record("a"), _record("a")])
    with pytest.raises(InputError, match=rf"{repeated}:2: fname a repeats line 1"):
        read_dialogsum(repeated, 5)
    with pytest.raises(InputError, match="no DialogSum records"):
        read_dialogsum(_write(tmp_path / "empty.jsonl", []), 5)


def test_the_vendored_sample_reads_whole_and_keeps_its_speakers() -> None:
    conversations = read_dialogsum(DIALOGSUM_FILE, 10_000)
    assert len(conversations) == 200 and len({c.id for c in conversations}) == 200
    speakers = {t.speaker for c in conversations for t in c.turns}
    assert {"Person1", "Person2"} <= speakers and all(
        s is not None and s.startswith("Person") for s in speakers
    )
    assert not any("#Person" in c.labels["summary"] for c in conversations)


def test_the_default_path_is_the_sample_from_the_params_folder() -> None:
    # params.yaml sits at the repository root: the default resolves from there, in the checkout.
    conversations = load_dialogsum(DialogSumConfig(), REPO_ROOT)
    assert len(conversations) == DialogSumConfig().max_dialogues == 200


@pytest.mark.skipif(not SHARED_DIALOGSUM.is_file(), reason="../shared is not beside the project")
def test_the_sample_is_the_first_200_lines_of_the_dev_split_unmodified() -> None:
    with SHARED_DIALOGSUM.open("rb") as handle:
        first_lines = b"".join(handle.readline() for _ in range(200))
    assert DIALOGSUM_FILE.read_bytes() == first_lines


def test_a_missing_file_names_the_key_the_path_and_how_to_turn_it_off(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_dialogsum(DialogSumConfig(path="nowhere/ds.jsonl"), tmp_path)
    message = str(caught.value)
    assert "ingest.dialogsum.path" in message and str(tmp_path / "nowhere/ds.jsonl") in message
    assert "ingest.dialogsum.path: null" in message
    assert load_dialogsum(DialogSumConfig(path=None), tmp_path) == []


def test_ingest_appends_dialogsum_to_the_embedded_corpus_or_leaves_it_off() -> None:
    on = IngestConfig(n_conversations=5, dialogsum=DialogSumConfig(str(DIALOGSUM_FILE), 4))
    conversations = ingest_corpus(on, Path("/nonexistent"))  # an absolute path is kept
    assert [c.context for c in conversations[5:]] == ["dialogue"] * 4
    assert [c.id for c in conversations[5:]] == [f"dialogsum-dev_{i}" for i in range(4)]
    assert all(c.pi for c in conversations[:5]) and not any(c.pi for c in conversations[5:])
    off = IngestConfig(n_conversations=5, dialogsum=DialogSumConfig(path=None))
    assert [c.id for c in ingest_corpus(off, Path())] == [c.id for c in conversations[:5]]


def test_the_embedded_corpus_gets_dialogsum_by_default_unless_it_is_never_appended() -> None:
    """``append: auto`` (the default) keeps the default run as it was: DialogSum appended."""
    auto = IngestConfig(n_conversations=2, dialogsum=DialogSumConfig(max_dialogues=3))
    assert auto.dialogsum.append == "auto"
    ids = [c.id for c in ingest_corpus(auto, REPO_ROOT)]
    assert ids[2:] == [f"dialogsum-dev_{i}" for i in range(3)]
    never = IngestConfig(n_conversations=2, dialogsum=DialogSumConfig(append="never"))
    assert [c.id for c in ingest_corpus(never, REPO_ROOT)] == ids[:2]


def test_a_user_corpus_gets_no_dialogsum_unless_it_is_asked_for(tmp_path: Path) -> None:
    """No licence surprise: DialogSum (non-commercial) joins a user's corpus only when
    ``ingest.dialogsum.append`` is ``always``, whatever its ``path``."""
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "ds.jsonl", [_record("x")])
    (tmp_path / "mine.jsonl").write_text(json.dumps({"id": "u1", "text": "hello"}) + "\n")
    unasked = IngestConfig(corpus_path="mine.jsonl", dialogsum=DialogSumConfig("data/ds.jsonl"))
    assert [c.id for c in ingest_corpus(unasked, tmp_path)] == ["u1"]
    never = IngestConfig(corpus_path="mine.jsonl", dialogsum=DialogSumConfig(append="never"))
    assert [c.id for c in ingest_corpus(never, tmp_path)] == ["u1"]
    asked = DialogSumConfig("data/ds.jsonl", append="always")
    config = IngestConfig(corpus_path="mine.jsonl", dialogsum=asked)
    assert [c.id for c in ingest_corpus(config, tmp_path)] == ["u1", "dialogsum-x"]
    # off, its file is not read: a missing one is no error
    off = IngestConfig(corpus_path="mine.jsonl", dialogsum=DialogSumConfig("nowhere.jsonl"))
    assert [c.id for c in ingest_corpus(off, tmp_path)] == ["u1"]


def test_ingest_resolves_the_path_from_the_params_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "ds.jsonl", [_record("x")])
    (tmp_path / "mine.jsonl").write_text(json.dumps({"id": "u1", "text": "hello"}) + "\n")
    dialogsum = DialogSumConfig("data/ds.jsonl", append="always")
    config = IngestConfig(corpus_path="mine.jsonl", dialogsum=dialogsum)
    assert [c.id for c in ingest_corpus(config, tmp_path)] == ["u1", "dialogsum-x"]


def test_a_user_id_in_the_dialogsum_namespace_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "ds.jsonl", [_record("x")])
    (tmp_path / "mine.jsonl").write_text(json.dumps({"id": "dialogsum-x", "text": "hi"}) + "\n")
    config = IngestConfig(corpus_path="mine.jsonl", dialogsum=DialogSumConfig("ds.jsonl"))
    with pytest.raises(InputError, match="mine.jsonl: id 'dialogsum-x' starts with 'dialogsum-'"):
        ingest_corpus(config, tmp_path)


def test_ingest_adds_the_sensitivity_calls_as_their_own_dataset() -> None:
    config = IngestConfig(
        n_conversations=3, sensitive_conversations=2, dialogsum=DialogSumConfig(path=None)
    )
    conversations = ingest_corpus(config, Path("/nonexistent"))  # the shipped taxonomy
    assert [c.id for c in conversations[3:]] == ["sens-00001", "sens-00002"]
    groups = split_by_dataset(conversations)
    assert [len(groups[name]) for name in ("main", "dialogsum", "sensitive")] == [3, 0, 2]


def test_a_user_corpus_with_a_path_outside_the_taxonomy_names_file_line_and_key(
    tmp_path: Path,
) -> None:
    good = {"turn": 0, "start": 0, "end": 3, "path": "healthcare.high.diagnosis.hiv"}
    bad = {**good, "path": "healthcare.high.rash"}
    lines = [
        {"id": "u1", "turns": [{"text": "HIV refill"}], "sensitive": [good]},
        {"id": "u2", "turns": [{"text": "HIV refill"}], "sensitive": [bad]},
    ]
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = IngestConfig(corpus_path="mine.jsonl", dialogsum=DialogSumConfig(path=None))
    with pytest.raises(InputError, match=r"mine.jsonl:2: key 'sensitive\[0\].path'"):
        ingest_corpus(config, tmp_path)


def test_a_taxonomy_named_in_params_must_exist(tmp_path: Path) -> None:
    config = IngestConfig(taxonomy="policy/mine.yaml", dialogsum=DialogSumConfig(path=None))
    with pytest.raises(InputError, match=r"policy/mine.yaml"):
        ingest_corpus(config, tmp_path)


def test_params_mirror_the_nested_dialogsum_section() -> None:
    config = stage_config(
        {"ingest": {"dialogsum": {"path": None, "max_dialogues": 3}}}, "ingest", cls=IngestConfig
    )
    assert config.dialogsum == DialogSumConfig(path=None, max_dialogues=3)
    assert stage_config({}, "ingest", cls=IngestConfig).dialogsum == DialogSumConfig()
    for section, message in [
        ({"dialogsum": {"paht": "x"}}, "unknown key 'ingest.dialogsum.paht'; allowed: path"),
        ({"dialogsum": {"max_dialogues": 0}}, "bad value for 'ingest.dialogsum.max_dialogues'"),
        ({"dialogsum": {"path": 3}}, "'ingest.dialogsum.path' must be"),
        ({"dialogsum": "off"}, "'ingest.dialogsum' must be a mapping"),
    ]:
        with pytest.raises(ParamsError, match=message):
            stage_config({"ingest": section}, "ingest", cls=IngestConfig)


@pytest.mark.parametrize(
    ("dialogsum", "message"),
    [
        (
            {"append": "sometimes"},
            "params: bad value for 'ingest.dialogsum.append': one of: auto, always, never",
        ),
        (
            {"append": "always", "path": None},
            "params: bad value for 'ingest.dialogsum.path': a JSONL file path when "
            "ingest.dialogsum.append is always",
        ),
        (
            {"append": True},
            "params: bad value for 'ingest.dialogsum.append': one of: auto, always, never, got True",
        ),
    ],
)
def test_a_bad_append_is_one_error_line_and_ingest_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    capsys: pytest.CaptureFixture[str],
    dialogsum: dict[str, object],
    message: str,
) -> None:
    from veiltune.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(json.dumps({"ingest": {"dialogsum": dialogsum}}))
    assert main(["ingest", "--params", "params.yaml"]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["params.yaml"]


def test_split_by_dataset_needs_both_the_prefix_and_the_context() -> None:
    def conv(conv_id: str, context: str) -> Conversation:
        return Conversation(conv_id, (Turn(None, "x"),), context)

    conversations = [
        conv("conv-1", "sales"),
        conv("dialogsum-a", "dialogue"),
        conv("dialogsum-b", "sales"),
        conv("dialogsum-c", "dialogue"),
    ]
    groups = split_by_dataset(conversations)
    assert [c.id for c in groups["main"]] == ["conv-1", "dialogsum-b"]
    assert [c.id for c in groups["dialogsum"]] == ["dialogsum-a", "dialogsum-c"]
    assert split_by_dataset([]) == {"main": [], "dialogsum": [], "sensitive": []}
    capped = split_by_dataset(conversations, limit=1)  # evaluate.max_conversations, per dataset
    assert {name: [c.id for c in group] for name, group in capped.items()} == {
        "main": ["conv-1"],
        "dialogsum": ["dialogsum-a"],
        "sensitive": [],
    }
