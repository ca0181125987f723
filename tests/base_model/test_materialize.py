from __future__ import annotations

from pathlib import Path

import pytest

from components.base_model.materialize import materialize_base_model
from components.core.errors import ParamsError


def test_bundled_gguf_becomes_a_plain_folder(smollm2_dir: Path) -> None:
    from transformers import AutoConfig

    names = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names
    config = AutoConfig.from_pretrained(smollm2_dir)
    assert config.model_type == "llama" and config.num_hidden_layers == 30
    assert getattr(config, "quantization_config", None) is None


def test_a_local_folder_is_copied_and_described(tmp_path: Path, base_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    info = materialize_base_model(str(base_model_dir), tmp_path / "copy")
    assert info.model_type == "llama" and info.vocab_size == 49152
    assert (
        info.n_parameters == AutoModelForCausalLM.from_pretrained(base_model_dir).num_parameters()
    )
    assert (tmp_path / "copy" / "model.safetensors").is_file()


def test_a_source_that_is_no_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match="base_model.source"):
        materialize_base_model(str(tmp_path), tmp_path / "out")
