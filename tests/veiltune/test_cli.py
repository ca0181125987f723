"""The command line: help texts, the detect/anonymize contract, and bad input."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.stages import STAGES
from veiltune.cli import build_parser, main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
COMMANDS = [
    *(s.cli[0] for s in STAGES),
    "evaluate-detection",
    "calibrate",
    "train-ner",
    "utility-report",
    "utility-profile",
    "detect",
    "flow",
    "serve",
    "deploy",
    "promote",
    "demote",
    "purge-raw",
    "team",
    "params",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_explains_itself(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert f"veiltune {command}" in out and len(out.splitlines()) >= 4


def test_top_level_help_gives_each_stage_its_registry_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for stage in STAGES:
        assert " ".join(stage.help.split())[:40] in out, stage.name


def test_top_level_help_lists_the_stages_in_pipeline_order_then_the_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listed = re.findall(r"^ {4}(\S+)", capsys.readouterr().out, flags=re.MULTILINE)
    stages = [stage.cli[0] for stage in STAGES]
    assert listed[: len(stages)] == stages
    assert sorted(listed) == sorted({*stages, *COMMANDS, "review", "grades", "utility-pack"})


@pytest.mark.parametrize(
    "command", ["calibrate", "detect", "evaluate-detection", "grades", "utility-pack"]
)
def test_each_tool_says_in_help_what_it_does(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # "calibrate: Calibrate detection." told a new user nothing (issue 39)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    found = re.search(rf"^ {{4}}{command}\s+(.*?)^(?! {{5}})", out, flags=re.MULTILINE | re.DOTALL)
    assert found is not None
    line = " ".join(found.group(1).split())
    assert len(line.split()) >= 8 and line[0].isupper() and line.endswith("."), line


def test_top_level_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in COMMANDS:
        assert command in out


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_detect_and_anonymize_contract(tmp_path: Path) -> None:
    records: list[dict[str, object]] = [
        {"id": "p1", "text": "You can reach Jane Doe at jane.doe@example.com."},
        {
            "id": "t1",
            "turns": [
                {"speaker": "Agent", "text": "Hi"},
                {"speaker": "Bob", "text": "I'm Bob Stone, 4111 1111 1111 1111"},
            ],
        },
    ]
    source = write_jsonl(tmp_path / "in.jsonl", records)
    spans_out, anon_out = tmp_path / "spans.jsonl", tmp_path / "anon.jsonl"
    assert (
        main(
            [
                "detect",
                "--params",
                str(REPO_PARAMS),
                "--input",
                str(source),
                "--output",
                str(spans_out),
            ]
        )
        == 0
    )
    detected = [json.loads(line) for line in spans_out.read_text().splitlines()]
    assert [d["id"] for d in detected] == ["p1", "t1"]
    text = records[0]["text"]
    assert isinstance(text, str)
    found = {text[s["start"] : s["end"]]: s["entity_type"] for s in detected[0]["spans"]}
    assert found["jane.doe@example.com"] == "EMAIL_ADDRESS"
    assert found["Jane Doe"] == "PERSON_NAME"
    assert all("turn" not in s for s in detected[0]["spans"])
    assert {s["turn"] for s in detected[1]["spans"]} == {1}
    # the speaker label anonymize replaces is reported too, as a corpus's pi spans name it
    speaker = [s for s in detected[1]["spans"] if s.get("field") == "speaker"]
    assert [(s["start"], s["end"], s["entity_type"]) for s in speaker] == [(0, 3, "PERSON_NAME")]
    assert (
        main(
            [
                "anonymize",
                "--params",
                str(REPO_PARAMS),
                "--input",
                str(source),
                "--output",
                str(anon_out),
            ]
        )
        == 0
    )
    anonymized = [json.loads(line) for line in anon_out.read_text().splitlines()]
    # the shipped params replace with surrogates: a name, its e-mail built from it, one
    # surrogate for "Bob" in the label and the turn, a card number of the card's shape
    first = re.fullmatch(r"You can reach (\w+) (\w+) at (\S+)@[\w.-]+\.", anonymized[0]["text"])
    assert first and first[3] == f"{first[1]}.{first[2]}".lower() and first[1] != "Jane"
    turn = anonymized[1]["turns"][1]
    said = re.fullmatch(r"I'm (\w+) (\w+), (\d{4} \d{4} \d{4} \d{4})", turn["text"])
    assert said and said[1] == turn["speaker"] != "Bob" and said[3] != "4111 1111 1111 1111"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "x"\n', "in.jsonl:2: malformed JSON"),
        (b'{"id": "a"}\n', "in.jsonl:1: record a has neither 'turns' nor 'text'"),
        (b'{"id": "a", "text": "\xff\xfe"}\n', "in.jsonl:1: not valid UTF-8"),
        (b"", "the corpus is empty"),
    ],
)
def test_bad_input_exits_nonzero_with_one_message_and_no_output(
    tmp_path: Path, body: bytes, *, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(body)
    output = tmp_path / "out.jsonl"
    code = main(
        ["anonymize", "--params", str(REPO_PARAMS), "--input", str(source), "--output", str(output)]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert f"veiltune anonymize: error: {source}" in err and message in err
    assert not output.exists()
    assert list(tmp_path.iterdir()) == [source]  # no temp files left behind either


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "detect",
            "--params",
            str(REPO_PARAMS),
            "--input",
            str(tmp_path / "no.jsonl"),
            "--output",
            str(tmp_path / "o.jsonl"),
        ]
    )
    assert code == 1 and "no.jsonl: no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--cluster", "tcp://nohost"], "anonymize.cluster: expected null, 'local' or a scheduler"),
        (["--workers", "0"], "anonymize.workers"),
    ],
)
def test_a_bad_cluster_flag_names_its_key_and_writes_nothing(
    tmp_path: Path, arguments: list[str], *, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "text": "hi"}])
    output = tmp_path / "o.jsonl"
    command = ["--params", str(REPO_PARAMS), "--input", str(source), "--output", str(output)]
    assert main(["detect", *command, *arguments]) == 1
    assert message in capsys.readouterr().err and not output.exists()


def test_evaluate_detection_takes_the_cluster_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "metrics.json"
    command = ["evaluate-detection", "--params", str(REPO_PARAMS), "--dataset", "embedded"]
    assert main([*command, "--output", str(output), "--cluster", "tcp://nohost"]) == 1
    assert "anonymize.cluster: expected null" in capsys.readouterr().err
    assert not output.exists()


def test_the_pipeline_stage_takes_its_cluster_from_params_not_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["anonymize", "--params", str(REPO_PARAMS), "--cluster", "local"]) == 1
    assert "the pipeline stage reads anonymize.cluster" in capsys.readouterr().err


def test_unknown_params_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("anonymize: {backend: presidio, colour: blue}\n")
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "text": "hi"}])
    code = main(
        [
            "anonymize",
            "--params",
            str(params),
            "--input",
            str(source),
            "--output",
            str(tmp_path / "o.jsonl"),
        ]
    )
    assert code == 1
    assert "unknown key 'anonymize.colour'" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def ner_params(folder: Path, ner: dict[str, object]) -> Path:
    """A params file in ``folder`` naming the checkout's policy files and ``ner``."""
    import yaml

    from components.anonymize.config import AnonymizeConfig

    root, defaults = REPO_PARAMS.parent, AnonymizeConfig()
    anonymize = {
        "calibration": str(root / str(defaults.calibration)),
        "exclusions": {t: str(root / p) for t, p in defaults.exclusions.items()},
        "dictionaries": {t: str(root / p) for t, p in defaults.dictionaries.items()},
        "pi_label_keys": str(root / str(defaults.pi_label_keys)),
        "ner": {"labels": str(root / defaults.ner.labels), **ner},
    }
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump({"anonymize": anonymize}), encoding="utf-8")
    return path


def _onnx_folder(folder: Path, model: bytes) -> str:
    """An exported model's folder: ``model`` as model.onnx, rampart's tokenizer and config."""
    from components.anonymize.ner import rampart_model_file

    folder.mkdir()
    (folder / "model.onnx").write_bytes(model)
    for name in ("tokenizer.json", "config.json"):
        (folder / name).write_bytes((rampart_model_file().parents[1] / name).read_bytes())
    return f"{folder.name}/model.onnx"


def _masked_lm_folder(folder: Path) -> str:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"]}))
    return folder.name


def _partial_labels(folder: Path) -> dict[str, object]:
    (folder / "labels.yaml").write_text("labels: {GIVEN_NAME: PERSON_NAME, SURNAME: null}\n")
    return {"model": "rampart", "labels": str(folder / "labels.yaml")}


@pytest.mark.parametrize(
    ("ner", "message"),
    [
        (
            lambda d: {"model": "no/model.onnx"},
            "anonymize.ner.model: {d}/no/model.onnx: no such ONNX file",
        ),
        (
            lambda d: {"model": _onnx_folder(d / "export", b"\x08\x07garbage")},
            "anonymize.ner.model: {d}/export/model.onnx: not a model ONNX Runtime loads",
        ),
        (
            lambda d: {"model": _masked_lm_folder(d / "mlm")},
            "anonymize.ner.model: {d}/mlm: not a token-classification model (its "
            "architectures: BertForMaskedLM)",
        ),
        (
            _partial_labels,
            "anonymize.ner.labels: {d}/labels.yaml maps no info type for the model's labels "
            "EMAIL, PHONE, URL, TAX_ID, BANK_ACCOUNT, ROUTING_NUMBER, GOVERNMENT_ID, PASSPORT, "
            "DRIVERS_LICENSE, BUILDING_NUMBER, STREET_NAME, SECONDARY_ADDRESS, CITY, STATE, "
            "ZIP_CODE: add them",
        ),
    ],
    ids=["missing", "corrupt", "not-a-token-classifier", "unmapped-labels"],
)
@pytest.mark.parametrize(
    "command",
    [["detect"], ["anonymize"], ["anonymize", "--workers", "2"]],
    ids=["detect", "anonymize", "anonymize-2-workers"],
)
def test_a_bad_ner_model_or_label_mapping_is_one_error_before_the_corpus_is_read(
    tmp_path: Path,
    ner: Any,
    *,
    message: str,
    command: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    params = ner_params(tmp_path, ner(tmp_path))
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"id": "a", "text": "not closed"\n')  # read first, it would be named
    before = tree(tmp_path)
    output = tmp_path / "out.jsonl"
    argv = [*command, "--params", str(params), "--input", str(source), "--output", str(output)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message.format(d=tmp_path) in err
    assert "in.jsonl" not in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert tree(tmp_path) == before


def test_components_never_import_prefect() -> None:
    code = (
        "import sys, importlib, pkgutil, components\n"
        "for m in pkgutil.walk_packages(components.__path__, 'components.'):\n"
        "    importlib.import_module(m.name)\n"
        "import audits.pii_output\n"
        "print('prefect' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ingest_of_a_bad_user_corpus_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.jsonl").write_bytes(
        b'{"id": "a", "text": "fine"}\n{"id": "b", "turns": "no"}\n'
    )
    params = tmp_path / "params.yaml"
    params.write_text("ingest: {corpus_path: mine.jsonl}\n")
    assert main(["ingest", "--params", str(params)]) == 1
    err = capsys.readouterr().err
    assert "mine.jsonl:2: key 'turns' must be a non-empty list" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.jsonl", "params.yaml"]


def test_a_bad_param_value_names_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text("ingest: {n_conversations: 0}\n")
    assert main(["ingest", "--params", str(params)]) == 1
    assert "bad value for 'ingest.n_conversations'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_evaluate_detection_writes_metrics_and_logs_to_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    gold = tmp_path / "gold.jsonl"
    write_jsonl(
        gold,
        [
            {
                "id": "a",
                "text": "Write to jane.doe@example.com today",
                "gold": [[9, 29, "EMAIL_ADDRESS"]],
            },
            {"id": "b", "text": "Nothing personal here", "gold": []},
        ],
    )
    output = tmp_path / "eval.json"
    assert (
        main(
            [
                "evaluate-detection",
                "--params",
                str(REPO_PARAMS),
                "--dataset",
                "jsonl",
                "--path",
                str(gold),
                "--output",
                str(output),
            ]
        )
        == 0
    )
    metrics = json.loads(output.read_text())
    assert metrics["char_recall"] == 1.0 and metrics["char_precision"] == 1.0
    assert metrics["entity_recall_by_type"]["EMAIL_ADDRESS"]["caught"] == 1
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("veiltune")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.metrics["char_recall"] == 1.0


def review_import(annotated: Path, output: Path) -> int:
    arguments = ["review", "import", "--params", str(REPO_PARAMS), "--input", str(annotated)]
    return main([*arguments, "--output", str(output)])


def test_review_import_scores_annotations_next_to_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no salt file here: digests are unsalted but still no text
    annotated = write_jsonl(
        tmp_path / "annotated.jsonl",
        [
            {
                "id": "c1",
                "context": "sales",
                "turns": [
                    {
                        "speaker": "[PERSON_NAME_1]",
                        "text": "hi it's [PERSON_NAME_2] (Halpert)[MISSED_PERSON_NAME_PARTIAL] from "
                        "(Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]",
                    }
                ],
            },
            {"id": "c2", "context": "sales", "turns": [{"speaker": "A", "text": "nothing missed"}]},
        ],
    )
    output = tmp_path / "report.json"
    code = review_import(annotated, output)
    assert code == 0
    report = json.loads(output.read_text())
    rows = {row["conversation_id"]: row for row in report["rows"]}
    assert rows["c1"]["annotated_score"] == 3 + 2 and rows["c2"]["annotated_score"] == 0
    assert rows["c1"]["estimated_score"] >= 3  # the scan sees "Halpert" beside a placeholder
    assert report["annotated_items_by_type"] == {
        "ORGANIZATION_NAME_SPEAKER": 1,
        "PERSON_NAME_PARTIAL": 1,
    }
    assert "Halpert" not in output.read_text() and "Mifflin" not in output.read_text()


def test_review_import_refuses_malformed_annotations_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotated = write_jsonl(
        tmp_path / "annotated.jsonl",
        [
            {"id": "c1", "text": "fine (Pam)[MISSED_PERSON_NAME]"},
            {"id": "c2", "text": "bad (Pam)[MISSED_PERSONNAME]"},
        ],
    )
    output = tmp_path / "report.json"
    code = review_import(annotated, output)
    assert code == 1
    assert f"{annotated}:2: turns[0].text: tag [MISSED_PERSONNAME]" in capsys.readouterr().err
    assert not output.exists()


def test_the_deepspeed_launchers_local_rank_argument_is_accepted() -> None:
    args = build_parser().parse_args(["--local_rank=0", "train", "--params", "p.yaml"])
    assert args.command == "train" and args.local_rank == 0


@pytest.fixture
def scratch_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch git repo with raw data, as the review that found the data loss used."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "data" / "raw").mkdir(parents=True)
    write_jsonl(tmp_path / "data" / "raw" / "corpus.jsonl", [{"id": "1", "text": "Hi Jo"}])
    (tmp_path / "data" / "raw" / "salt").write_text("00ff\n")
    write_jsonl(tmp_path / "in.jsonl", [{"id": "1", "text": "Hi Jo"}])
    (tmp_path / "params.yaml").write_text(REPO_PARAMS.read_text())
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")
    (tmp_path / "documents").mkdir()  # a folder of the user's own
    (tmp_path / "documents" / "letter.txt").write_text("Dear Jo")
    (tmp_path / ".veiltune" / "keys").mkdir(parents=True)
    (tmp_path / ".veiltune" / "keys" / "signing_key.pem").write_text(
        "-----BEGIN PRIVATE KEY-----\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["detect", "--input", "in.jsonl", "--output", ""], "names no file"),
        (["detect", "--input", "in.jsonl", "--output", "."], "names no file"),
        (["detect", "--input", "in.jsonl", "--output", "in.jsonl"], "names the same file"),
        (
            ["anonymize", "--input", "data/raw/corpus.jsonl", "--output", "data/raw"],
            "is a directory",
        ),
        (
            ["anonymize", "--input", "in.jsonl", "--output", "a.jsonl", "--spans", ""],
            "names no file",
        ),
        (
            ["anonymize", "--input", "in.jsonl", "--output", "a.jsonl", "--spans", "a.jsonl"],
            "names the same file",
        ),
        (["anonymize", "--output", "data/raw/corpus.jsonl"], "lies in data/raw/"),
        (["anonymize", "--input", "in.jsonl", "--output", "no/such/dir/a.jsonl"], "does not exist"),
        (["evaluate-detection", "--dataset", "embedded", "--output", ""], "names no file"),
        (["review", "import", "--input", "in.jsonl", "--output", "."], "names no file"),
        (["review", "import", "--input", "in.jsonl", "--output", "data"], "is a directory"),
        (["anonymize", "--input", "missing.jsonl", "--output", "a.jsonl"], "no such file"),
        # The hostile review of 2026-11-27: a folder named as an output was replaced whole.
        (
            ["utility-pack", "data/raw", "--anonymized", "placeholder=data/anonymized"],
            "the top level of data/raw/ is ingest's",
        ),
        (["utility-pack", ".git"], "lies in .git/"),
        (["utility-pack", "documents"], "veiltune did not write it"),
        (["utility-report", "--output", "documents"], "veiltune did not write it"),
        (["utility-report", "--output", "params.yaml"], "a file where a folder is to be written"),
        (["utility-profile", "--output", "documents"], "veiltune did not write it"),
        (["review", "export", "--output", "documents"], "veiltune did not write it"),
        (["review", "export", "--output", "params.yaml"], "a file where a folder is to be written"),
        (["review", "export", "--output", "data/raw"], "lies in data/raw/"),
        # ... and files that only their owner writes were overwritten.
        (
            ["detect", "--input", "in.jsonl", "--output", ".veiltune/keys/signing_key.pem"],
            "lies in .veiltune/keys/",
        ),
        (["detect", "--input", "in.jsonl", "--output", "data/raw/salt"], "lies in data/raw/"),
        (["anonymize", "--input", "in.jsonl", "--output", "dvc.lock"], "checkout's dvc.lock"),
        (["review", "import", "--input", "in.jsonl", "--output", "params.yaml"], "checkout's"),
        (["calibrate", "--data", "embedded", "--output", "params.yaml"], "checkout's params"),
        (["grades", "export", "--output", "data/raw/salt"], "top level of data/raw/ is ingest's"),
        (["grades", "export", "--output", "reports/grades.jsonl"], "must be under data/raw"),
    ],
)
def test_unsafe_output_paths_are_refused_before_anything_is_touched(
    scratch_repo: Path, argv: list[str], *, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(scratch_repo)
    command = (
        [*argv[:2], "--params", str(REPO_PARAMS), *argv[2:]]
        if argv[0] in ("review", "grades")
        else [argv[0], "--params", str(REPO_PARAMS), *argv[1:]]
    )
    assert main(command) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert tree(scratch_repo) == before


def test_calibrate_writes_a_policy_file_anonymize_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    from components.anonymize.calibration import read_thresholds
    from components.anonymize.config import DEFAULT_INFO_TYPES
    from tests.conftest import TEST_DATA

    monkeypatch.chdir(tmp_path)
    output = tmp_path / "calibration.yaml"
    data = [
        f"wnut17={TEST_DATA / 'wnut17' / 'emerging.dev.sample.conll'}",
        f"presidio_research={TEST_DATA / 'presidio_research' / 'generated_small.sample.json'}",
        # the same templates as speech recognition writes them: a set of their own
        f"speech:presidio_research={TEST_DATA / 'presidio_research' / 'generated_small.sample.json'}",
    ]
    arguments = ["calibrate", "--params", str(REPO_PARAMS), "--output", str(output)]
    assert main([*arguments, *(a for d in data for a in ("--data", d))]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["calibrated_on"] == {
        "wnut17:emerging.dev.sample.conll": 30,
        "presidio_research:generated_small.sample.json": 15,  # its tuning templates only
        "speech:presidio_research:generated_small.sample.json": 15,
    }
    measured = printed["operating_points"]["recall"]["measured"]
    speech = measured["speech:presidio_research:generated_small.sample.json"]
    written = measured["presidio_research:generated_small.sample.json"]
    assert speech != written  # measured on other texts
    for point in ("recall", "balanced", "precision"):
        thresholds = read_thresholds(
            output, point, default=0.35, known_info_types=DEFAULT_INFO_TYPES
        )
        assert all(0.0 <= t <= 1.0 for t in thresholds.recognizers.values())
    assert main([*arguments, "--data", "wnut17"]) == 1  # a file kind needs its path
    assert "--data wnut17: [speech:]KIND=PATH" in capsys.readouterr().err


def test_false_positive_sample_goes_to_stderr_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"id": "a", "text": "Ask Jonathan Whitfield about it", "gold": []}],
    )
    output = tmp_path / "eval.json"
    arguments = ["evaluate-detection", "--params", str(REPO_PARAMS), "--dataset", "jsonl"]
    extra = ["--path", str(gold), "--output", str(output), "--show-false-positives", "5"]
    assert main([*arguments, *extra]) == 0
    captured = capsys.readouterr()
    assert "[[Jonathan Whitfield]]" in captured.err and "by " in captured.err
    assert "Whitfield" not in captured.out and "Whitfield" not in output.read_text()
    assert (
        json.loads(output.read_text())["predicted_chars_by_type"]["PERSON_NAME"][
            "false_positive_chars"
        ]
        > 0
    )


def test_a_detection_sweep_prints_one_row_per_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {
                "id": "a",
                "text": "Please ask Zorblax about the invoice",
                "gold": [[11, 18, "PERSON_NAME"]],
            }
        ],
    )
    arguments = ["evaluate-detection", "--params", str(REPO_PARAMS), "--dataset", "jsonl"]
    arguments += ["--path", str(gold), "--detectors", "vocab_threshold"]
    assert main([*arguments, "--sweep", "vocab_threshold=50,100000"]) == 0
    header, _rule, *rows = capsys.readouterr().out.strip().splitlines()
    assert header.startswith("| vocab_threshold | char_precision | char_recall |")
    assert [row.split(" | ")[0] for row in rows] == ["| 50", "| 100000"]
    assert main([*arguments, "--sweep", "vocab_threshold=50.5"]) != 0
    assert "anonymize.vocab_threshold: an integer" in capsys.readouterr().err
    assert main([*arguments, "--sweep", "lm_probability.p=0.01"]) != 0
    assert "lm_probability is not among anonymize.detectors" in capsys.readouterr().err


def test_grades_need_the_raw_corpus_and_keep_raw_text_under_data_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text("ingest: {}\n")
    assert main(["grades", "export", "--params", str(params)]) == 1
    assert "data/raw/corpus.jsonl" in capsys.readouterr().err
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    (raw / "corpus.jsonl").write_text('{"id": "a", "text": "hi"}\n')
    outside = tmp_path / "summaries.jsonl"
    assert main(["grades", "export", "--params", str(params), "--output", str(outside)]) == 1
    assert "must be under data/raw" in capsys.readouterr().err
    assert main(["grades", "import", "--input", "missing.jsonl"]) == 1
    assert "missing.jsonl" in capsys.readouterr().err
    assert not outside.exists() and not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    ("records", "fraction"),
    [
        ([{"id": "a", "text": "hello"}, {"id": "b", "text": "bye"}], 0.01),
        ([{"id": "a", "text": "hello"}], 0.99),  # the one conversation is kept to train on
    ],
)
def test_ingest_refuses_a_corpus_that_holds_no_conversation_out(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    capsys: pytest.CaptureFixture[str],
    records: list[dict[str, object]],
    fraction: float,
) -> None:
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "mine.jsonl", records)
    params = tmp_path / "params.yaml"
    ingest = (
        f"{{corpus_path: mine.jsonl, heldout_fraction: {fraction}, canary_types: [], "
        "dialogsum: {path: null}}"
    )
    params.write_text(f"ingest: {ingest}\n")
    assert main(["ingest", "--params", str(params)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("veiltune ingest: error: params: bad value for 'ingest.heldout_fraction'")
    assert "no held-out conversation" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.jsonl", "params.yaml"]


@pytest.mark.parametrize(
    ("command", "name", "body", "where"),
    [
        (["train", "--params"], "params.yaml", b"train:\nCaf\xe9: 3\n", ":2:"),
        (
            ["evaluate-detection", "--params", str(REPO_PARAMS), "--dataset", "wnut17", "--path"],
            "labels.conll",
            b"Hello\tO\n\nCaf\xe9\tB-person\n",
            ":3:",
        ),
    ],
    ids=["train-params", "wnut17"],
)
def test_a_file_that_is_not_utf8_is_one_error_naming_its_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    name: str,
    body: bytes,
    where: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    source = tmp_path / name
    source.write_bytes(body)
    output = ["--output", str(tmp_path / "metrics.json")] if "--dataset" in command else []
    assert main([*command, str(source), *output]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"veiltune {command[0]}: error: {source}{where} not valid UTF-8 (byte 3); re-encode "
        "the file as UTF-8"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_no_library_phones_home_from_a_veiltune_process() -> None:
    """MLflow 3 opens an HTTPS connection to its telemetry host from every process that
    logs a run, unless told not to (found 2026-11-27 in a train stage's debug log); outside
    CI nothing else tells it. A veiltune process sets the opt-outs before any library loads."""
    script = (
        "import os; from veiltune.cli import OFFLINE_ENVIRONMENT\n"
        "[os.environ.setdefault(k, v) for k, v in OFFLINE_ENVIRONMENT.items()]\n"
        "from mlflow.telemetry.utils import is_telemetry_disabled\n"
        "print(is_telemetry_disabled())\n"
    )
    ci_markers = ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS", "MLFLOW_DISABLE_TELEMETRY")
    env = {k: v for k, v in os.environ.items() if k not in ci_markers and k != "DO_NOT_TRACK"}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "True"


def test_every_command_names_its_handler_where_its_parser_is_built() -> None:
    """Dispatch is each parser's own ``handler`` default: a command without one would parse
    and then fail, so every leaf command (``review export``, ``train``, ...) must name one."""

    def leaves(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += leaves(sub, (*words, name))
        if not found and not callable(parser.get_default("handler")):
            raise AssertionError(f"veiltune {' '.join(words)}: no handler")
        return found or [words]

    commands = leaves(build_parser(), ())
    assert ("review", "export") in commands and ("grades", "import") in commands
    assert {words[0] for words in commands} == {*COMMANDS, "grades", "utility-pack"}
