"""The library warnings a user can do nothing about are silenced, and only those."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import pytest

from components.core.library_noise import KNOWN_LOG_LINES, KNOWN_WARNINGS, silence_library_noise
from veiltune.cli import main


def warn_from(module: str, message: str, *, category: type[Warning]) -> None:
    """Emit ``message`` as if the module named ``module`` had (``__name__`` in its globals)."""
    exec(
        "import warnings\nwarnings.warn(message, category)",
        {"__name__": module, "message": message, "category": category},
    )


@pytest.fixture
def silenced() -> Iterator[list[warnings.WarningMessage]]:
    """The warnings recorded after :func:`silence_library_noise`, every other one shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_library_noise()
        yield caught


def test_each_known_warning_is_silenced_where_it_is_emitted(
    silenced: list[warnings.WarningMessage],
) -> None:
    warn_from(
        "transformers.modeling_utils",
        "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use "
        "`is_activation_checkpointing` instead.",
        category=FutureWarning,
    )
    warn_from(
        "torch.utils.data.dataloader",
        "'pin_memory' argument is set as true but no accelerator is found, then device "
        "pinned memory won't be used.",
        category=UserWarning,
    )
    assert silenced == []
    assert len(KNOWN_WARNINGS) == 2


@pytest.mark.parametrize(
    ("module", "message", "category"),
    [
        # another deprecation of the same library: the user may need to hear of it
        ("transformers.modeling_utils", "`use_cache` is deprecated", FutureWarning),
        # the known text, but from another module
        ("peft.peft_model", "`is_gradient_checkpointing` is deprecated", FutureWarning),
        # from a module whose name only starts like the known one's
        ("torch.utils.data.dataloader_x", "'pin_memory' argument is set as true", UserWarning),
        # the known text in another category
        ("torch.utils.data.dataloader", "'pin_memory' argument is set as true", RuntimeWarning),
    ],
)
def test_any_other_warning_still_shows(
    silenced: list[warnings.WarningMessage],
    module: str,
    *,
    message: str,
    category: type[Warning],
) -> None:
    warn_from(module, message, category=category)
    assert [str(w.message) for w in silenced] == [message]


@pytest.fixture
def deepspeed_logger() -> Iterator[logging.Logger]:
    """DeepSpeed's logger, its filters and propagation put back afterwards."""
    logger = logging.getLogger(KNOWN_LOG_LINES[0].logger)
    filters, propagate = list(logger.filters), logger.propagate
    logger.filters[:] = []
    logger.propagate = True  # as DeepSpeed sets it, False; caplog listens on the root logger
    yield logger
    logger.filters[:], logger.propagate = filters, propagate


def test_deepspeeds_cpu_line_is_dropped_and_its_other_warnings_kept(
    deepspeed_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    silence_library_noise()
    silence_library_noise()  # twice: one filter
    with caplog.at_level(logging.WARNING, logger=deepspeed_logger.name):
        deepspeed_logger.warning(
            "Setting accelerator to CPU. If you have GPU or other accelerator, we were "
            "unable to detect it."
        )
        deepspeed_logger.warning("async_io requires the dev libaio .so object and headers")
    assert [r.getMessage() for r in caplog.records] == [
        "async_io requires the dev libaio .so object and headers"
    ]
    assert len(deepspeed_logger.filters) == 1


def test_a_veiltune_process_silences_them_before_its_command_runs() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(SystemExit):
            main(["--help"])
        warn_from(
            "transformers.modeling_utils",
            "`is_gradient_checkpointing` is deprecated",
            category=FutureWarning,
        )
    assert caught == []
