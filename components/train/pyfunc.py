"""The registered model's MLflow pyfunc: the adapter is an artifact, the base model a folder
named in its config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow.pyfunc import PythonModel

from components.train.adapter import generate, load_adapter


class AdapterPyfunc(PythonModel):
    """MLflow pyfunc: the adapter is an artifact, the base model a folder named in its config."""

    def load_context(self, context: Any) -> None:
        config = context.model_config or {}
        self.max_new_tokens = int(config.get("max_new_tokens", 64))
        self.model, self.tokenizer = load_adapter(
            Path(config["base_model"]), Path(context.artifacts["adapter"])
        )

    def predict(self, context: Any, model_input: Any, params: dict[str, Any] | None = None) -> Any:
        prompts = _prompts_from(model_input)
        max_new = int((params or {}).get("max_new_tokens", self.max_new_tokens))
        return generate(self.model, self.tokenizer, prompts, max_new)


def _prompts_from(model_input: Any) -> list[str]:
    if isinstance(model_input, str):
        return [model_input]
    if hasattr(model_input, "iloc"):  # a pandas DataFrame: its first column
        return [str(v) for v in model_input.iloc[:, 0]]
    return [str(v) for v in model_input]
