"""Raw data at rest, through `dvc repro` in a temporary repo with a user corpus: every string
of a record is anonymized (labels of any shape), the records' ids (an e-mail address, a phone
number) are replaced by keyed pseudonyms from ingest on, raw and conversation files are
private whatever the umask, raw outputs never enter DVC's cache, and `veiltune purge-raw`
erases every raw copy, copies left in the cache by older versions included."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.pipeline_repo import BIN, REPO_ROOT, make_pipeline_repo, pipeline_env

pytestmark = pytest.mark.slow

# Values found nowhere in the project's own files (checked below), so that finding one in
# the temporary repo can only mean a copy of the raw corpus.
CALLERS = [
    ("Dariusz Wojciechowski", "555-867-5309", "dwojo_1984", "d.wojciechowski@example.org"),
    ("Agnieszka Brzęczyszczykiewicz", "555-212-4471", "agabrz_77", "agnieszka.b@example.net"),
    ("Thaddeus Okonkwo-Reyes", "555-390-1188", "tokreyes_02", "t.okonkwo@example.com"),
]
CARD, SSN = "4111111111111111", "078-05-1120"
# The records' ids: personal information too, as a CRM export may use them.
RAW_IDS = [f"jane.doe{i}@examplemail.com" if i % 2 else f"41555501{i:02d}" for i in range(12)]


def user_corpus() -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for i in range(12):
        name, phone, login, email = CALLERS[i % len(CALLERS)]
        records.append(
            {
                "id": RAW_IDS[i],
                "context": "customer_support",
                "turns": [
                    {"speaker": "Agent", "text": "Thanks for calling, how can I help?"},
                    {"speaker": "Caller", "text": "Hi, I would like to update my details."},
                    {"speaker": "Agent", "text": "Sure, I have updated your record now."},
                ],
                "labels": {
                    "summary": "The caller asked to update their details.",
                    "purpose": "address_change",
                    "crm": {
                        "caller_name": name,
                        "callback": int(phone.replace("-", "")),
                        "login": login,
                        "contacts": [{"email": email, "primary": True}],
                        "card": CARD,
                        "ssn": SSN,
                    },
                },
            }
        )
    return records


RAW_VALUES = [v for caller in CALLERS for v in caller] + [
    CARD,
    SSN,
    *(c[1].replace("-", "") for c in CALLERS),
]


def files_holding(root: Path, values: list[str]) -> dict[str, list[str]]:
    """Every file under ``root`` holding one of ``values`` (bytes, case-insensitive)."""
    needles = [v.lower().encode() for v in values]
    found: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes().lower()
            hits = [v for v, n in zip(values, needles, strict=True) if n in data]
            if hits:
                found[path.relative_to(root).as_posix()] = hits
    return found


def repro(repo: Path, *args: str) -> None:
    # umask 000: the raw folder and files must be private whatever the umask says
    result = subprocess.run(
        ["sh", "-c", f"umask 000 && {BIN / 'dvc'} repro {' '.join(args)}"],
        cwd=repo,
        env=pipeline_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path) -> Path:
    assert not files_holding(REPO_ROOT / "components", RAW_VALUES)  # the values are ours
    repo = make_pipeline_repo(
        tmp_path_factory.mktemp("at-rest"),
        base_model_dir,
        ingest={"corpus_path": "user.jsonl", "canary_types": [], "dialogsum": {"path": None}},
    )
    (repo / "user.jsonl").write_text("".join(json.dumps(r) + "\n" for r in user_corpus()))
    repro(repo, "review")
    return repo


def test_no_string_of_a_record_escapes_anonymization(repo: Path) -> None:
    leaked = files_holding(repo, RAW_VALUES)
    # The raw corpus is where raw values live, and the user's own file; nothing else.
    assert set(leaked) == {"user.jsonl", "data/raw/corpus.jsonl"}, leaked
    anonymized = [json.loads(line) for line in (repo / "data/anonymized/corpus.jsonl").open()]
    crm = anonymized[0]["labels"]["crm"]
    # a surrogate (the shipped replacement) where the raw name was
    assert crm["caller_name"] and crm["caller_name"] not in RAW_VALUES
    assert crm["contacts"][0]["primary"]
    assert anonymized[0]["labels"]["purpose"] == "address_change"  # a known class label


def test_record_ids_are_pseudonyms_from_ingest_on(repo: Path) -> None:
    # The original ids are in the user's file and the owner-only mapping, nowhere else:
    # not in the splits, the spans, the risk tables, the review sample, MLflow or DVC.
    assert set(files_holding(repo, RAW_IDS)) == {"user.jsonl", "data/raw/id_pseudonyms.jsonl"}
    mapping = [json.loads(line) for line in (repo / "data/raw/id_pseudonyms.jsonl").open()]
    assert [m["id"] for m in mapping] == RAW_IDS
    pseudonyms = [m["pseudonym"] for m in mapping]
    raw = [json.loads(line)["id"] for line in (repo / "data/raw/corpus.jsonl").open()]
    anonymized = [json.loads(line)["id"] for line in (repo / "data/anonymized/corpus.jsonl").open()]
    assert raw == anonymized == pseudonyms
    assert all(p.startswith("c-") for p in pseudonyms) and len(set(pseudonyms)) == 12
    splits = json.loads((repo / "data/splits.json").read_text())
    assert sorted(splits["train"] + splits["heldout"]) == sorted(pseudonyms)


def test_raw_files_are_private_whatever_the_umask(repo: Path) -> None:
    # and so are the anonymized corpus and the review sample (anonymized text may still
    # hold what anonymization missed), and the splits
    for folder in ("data/raw", "data/pi_inventory", "data/anonymized", "data/review"):
        assert stat.S_IMODE((repo / folder).stat().st_mode) == 0o700, folder
    for name in (
        "data/raw/corpus.jsonl",
        "data/raw/salt",
        "data/raw/canaries.jsonl",
        "data/raw/id_pseudonyms.jsonl",
        "data/pi_inventory/gold.jsonl",
        "data/anonymized/corpus.jsonl",
        "data/anonymized/spans.jsonl",
        "data/review/review_sample.jsonl",
        "data/review/review.html",
        "data/splits.json",
    ):
        assert stat.S_IMODE((repo / name).stat().st_mode) == 0o600, name


def test_raw_outputs_never_enter_the_dvc_cache(repo: Path) -> None:
    cache = repo / ".dvc" / "cache"
    assert cache.is_dir()
    assert not files_holding(cache, RAW_VALUES + RAW_IDS)
    salt = (repo / "data/raw/salt").read_text().strip()
    assert not files_holding(cache, [salt])


def test_purge_raw_erases_every_raw_copy_old_cached_ones_included(repo: Path) -> None:
    # An older veiltune cached raw outputs (and DVC's run cache copied them): do so once.
    dvc_yaml = repo / "dvc.yaml"
    current = dvc_yaml.read_text()
    stages = yaml.safe_load(current)
    stages["stages"]["ingest"]["outs"] = [
        "data/raw",
        "data/pi_inventory/gold.jsonl",
        "data/splits.json",
    ]
    dvc_yaml.write_text(yaml.safe_dump(stages, sort_keys=False))
    repro(repo, "-f", "ingest")
    dvc_yaml.write_text(current)
    assert files_holding(repo / ".dvc" / "cache", RAW_VALUES)  # old copies are there
    assert files_holding(repo / ".dvc" / "cache", RAW_IDS)  # the id mapping's too
    veiltune = [str(BIN / "veiltune"), "purge-raw"]
    listed = subprocess.run(
        veiltune, cwd=repo, env=pipeline_env(), capture_output=True, text=True, check=True
    )
    assert "data/raw" in json.loads(listed.stdout)["would_remove"]
    assert (repo / "data/raw/corpus.jsonl").is_file()  # listing erases nothing
    subprocess.run([*veiltune, "--yes"], cwd=repo, env=pipeline_env(), check=True)
    # the user's own file only
    assert set(files_holding(repo, RAW_VALUES + RAW_IDS)) == {"user.jsonl"}
    assert not (repo / "data/raw").exists() and not (repo / "data/anonymized").exists()
