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


@pytest.mark.parametrize(("tied", "expected"), [(True, 40), (False, 80)])
def test_the_count_read_from_the_files_takes_a_tied_output_layer_once(
    tmp_path: Path, tied: bool, *, expected: int
) -> None:
    import json

    import numpy as np
    from safetensors.numpy import save_file

    from components.base_model.materialize import _describe

    weights = {"model.embed_tokens.weight": np.zeros((10, 4)), "lm_head.weight": np.zeros((10, 4))}
    save_file(weights, str(tmp_path / "model.safetensors"))
    config = {"model_type": "llama", "vocab_size": 10, "tie_word_embeddings": tied}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert _describe("a folder", tmp_path).n_parameters == expected


def test_a_config_silent_on_tied_weights_is_counted_by_building_the_model(
    tmp_path: Path, base_model_dir: Path
) -> None:
    import json
    import shutil

    from transformers import AutoConfig, AutoModelForCausalLM

    from components.base_model.materialize import _describe

    folder = shutil.copytree(base_model_dir, tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    del config["tie_word_embeddings"]  # transformers' default for the type then decides
    (folder / "config.json").write_text(json.dumps(config))
    built = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder))
    assert _describe("a folder", folder).n_parameters == built.num_parameters()
    # llama's default is untied: an output layer of its own, counted as the model has it
    assert built.num_parameters() > _describe("a folder", base_model_dir).n_parameters
