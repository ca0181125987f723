"""DeepSpeed ZeRO on this CPU (gloo): the same train_lora entry point a GPU cluster runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.core.errors import ParamsError
from components.train.config import TrainConfig
from components.train.engine import deepspeed_config
from components.train.lora import train_lora

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "infra" / "deepspeed"

SCRIPT = """
import json, sys
from pathlib import Path
from components.train.config import TrainConfig
from components.core.corpus import Conversation, Turn
from components.train.lora import train_lora

conversations = [
    Conversation(f"c{i}", (Turn("[PERSON_NAME_1]", "I was charged twice."),
                           Turn("[PERSON_NAME_2]", "I refunded the second charge.")),
                 labels={"summary": "A double charge was refunded.", "outcome": "resolved"})
    for i in range(4)
]
config = TrainConfig(max_steps=2, batch_size=2, max_seq_length=96, lora_r=8, lora_alpha=16,
                     deepspeed=sys.argv[2])
result = train_lora(
    Path(sys.argv[1]),
    conversations,
    config=config,
    output_dir=Path(sys.argv[3]),
    work_dir=Path(sys.argv[4]),
)
print("RESULT " + json.dumps(result.to_metrics()))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "stage"), [("zero2.json", 2), ("zero3.json", 3)])
def test_zero_steps_on_cpu(tmp_path: Path, base_model_dir: Path, *, name: str, stage: int) -> None:
    # A process of its own: DeepSpeed initialises a process group that outlives the call.
    adapter = tmp_path / "adapter"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(base_model_dir),
            str(CONFIGS / name),
            str(adapter),
            str(tmp_path / "work"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["engine"] == f"deepspeed-zero{stage}" and result["steps"] == 2
    from safetensors.torch import load_file

    weights = load_file(adapter / "adapter_model.safetensors")
    # ZeRO-3 partitions parameters: the saved adapter must hold them whole, trained.
    lora_b = [w for key, w in weights.items() if "lora_B" in key]
    assert lora_b and all(w.shape[1] == 8 for w in lora_b)
    assert any(float(w.abs().sum()) > 0 for w in lora_b)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "is not JSON"),
        ('{"train_micro_batch_size_per_gpu": 1}', "zero_optimization.stage"),
    ],
)
def test_bad_deepspeed_config_is_refused_before_training(
    tmp_path: Path, content: str | None, *, message: str
) -> None:
    path = tmp_path / "ds.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ParamsError, match=message):
        deepspeed_config(str(path))
    config = TrainConfig(max_steps=1, deepspeed=str(path))
    with pytest.raises(ParamsError, match="train.deepspeed"):
        train_lora(
            tmp_path / "no-model",
            [],
            config=config,
            output_dir=tmp_path / "a",
            work_dir=tmp_path / "w",
        )


def test_shipped_configs_parse() -> None:
    stages = {
        p.name: deepspeed_config(str(p))["zero_optimization"]["stage"]
        for p in CONFIGS.glob("*.json")
    }
    assert stages == {"zero2.json": 2, "zero3.json": 3, "zero3_offload.json": 3}
    offload = json.loads((CONFIGS / "zero3_offload.json").read_text())["zero_optimization"]
    assert offload["offload_optimizer"]["device"] == "cpu"
