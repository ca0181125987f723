"""Where training runs: the engine's choices, checked without the hardware they are for."""

from __future__ import annotations

import pytest

from components.train.engine import bf16_supported


@pytest.mark.parametrize("supported", [True, False])
def test_a_gpu_is_asked_whether_it_trains_in_bf16(
    monkeypatch: pytest.MonkeyPatch, supported: bool
) -> None:
    # It asked torch.cuda.isbf16_supported, a name torch does not have: every training run
    # on a GPU failed with an AttributeError while building its Trainer arguments.
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: supported)
    assert bf16_supported() is supported


def test_no_gpu_trains_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bf16_supported() is False
