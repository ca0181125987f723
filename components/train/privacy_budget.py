"""DP training's budget (``train.privacy``): the noise multiplier an accountant solves for the
target ε at δ, the checks that refuse a budget before training, and the figures the ε spent
is reported with (``dp.*`` in ``metrics/train.json``)."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from components.core.errors import ParamsError
from components.train.params import PrivacyConfig

# Beyond this the noise on a step's summed gradient is a hundred clipped gradients' worth:
# training learns nothing, so a budget that needs more is refused (Opacus would search up to
# a million, minutes of accounting).
MAX_NOISE_MULTIPLIER = 100.0
DEFAULT_DELTA = 1e-5


def _epsilon_at(
    noise_multiplier: float, privacy: PrivacyConfig, *, rate: float, steps: int, delta: float
) -> float:
    """The ε the configured accountant counts for ``steps`` steps at this noise and rate."""
    from opacus.accountants import create_accountant

    accountant = create_accountant(privacy.accountant)
    accountant.history = [(noise_multiplier, rate, steps)]
    with quiet_accountant():
        return float(accountant.get_epsilon(delta=delta))


@contextlib.contextmanager
def quiet_accountant() -> Iterator[None]:
    """Opacus's accountants without their warning that the best RDP order is the largest
    they try. The PRV accountant sizes its domain by an RDP bound and warns so on nearly
    every call; the ε it then gives is the PRV one, and where RDP itself gives the ε the
    bound is only looser (more cautious), never wrong."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Optimal order is the largest alpha", UserWarning)
        yield


def default_delta(n_units: int) -> float:
    """δ when ``train.privacy.delta`` is null: 1e-5, or 1/n^1.1 where that is smaller; both
    well below the 1/n at which a mechanism could publish one unit whole and still meet δ.
    1e-5 also keeps the one-run audit's δ term (2mδ for m canaries) small enough for its
    bound to mean something (``audits/dp_one_run.py``)."""
    return min(DEFAULT_DELTA, float(n_units**-1.1))


@dataclass(frozen=True)
class PrivacyBudget:
    """What the accountant was asked for, and the noise it solved for."""

    target_epsilon: float
    delta: float
    sample_rate: float
    steps: int
    noise_multiplier: float
    accountant: str
    max_grad_norm: float
    expected_batch: int
    n_units: int


def privacy_budget(
    privacy: PrivacyConfig, *, n_units: int, expected_batch: int, steps: int
) -> PrivacyBudget:
    """The noise multiplier that spends ``privacy.epsilon`` at δ over ``steps`` steps of
    Poisson sampling at ``expected_batch / n_units``.

    Raises:
        ParamsError: too few units for the expected batch, a δ not below 1/n, or an ε
            no noise reaches at these steps; naming the key and what would work.
    """
    if n_units <= expected_batch:
        raise ParamsError(
            f"params: train.privacy: {n_units} training units (conversations and inserted "
            f"audit canaries) for an expected batch of {expected_batch} (train.batch_size × "
            "train.gradient_accumulation_steps): Poisson sampling needs more units than the "
            "batch; lower the batch, or train on more conversations"
        )
    delta = privacy.delta if privacy.delta is not None else default_delta(n_units)
    if delta >= 1 / n_units:
        raise ParamsError(
            f"params: train.privacy.delta: {delta:g} is not below 1/n = {1 / n_units:.3g} "
            f"for {n_units} training units; null takes 1/n^1.1 = {default_delta(n_units):.3g}"
        )
    rate = expected_batch / n_units
    if (
        _epsilon_at(MAX_NOISE_MULTIPLIER, privacy, rate=rate, steps=steps, delta=delta)
        > privacy.epsilon
    ):
        raise ParamsError(
            f"params: train.privacy.epsilon: {privacy.epsilon:g} at δ {delta:.3g} is out of "
            f"reach for {n_units} units at sampling rate {rate:.3g} over {steps} steps: it "
            f"needs a noise multiplier above {MAX_NOISE_MULTIPLIER:g}, where the gradient is "
            "noise; raise epsilon, lower train.max_steps or the batch, or add conversations"
        )
    from opacus.accountants.utils import get_noise_multiplier

    with quiet_accountant():
        sigma = get_noise_multiplier(
            target_epsilon=privacy.epsilon,
            target_delta=delta,
            sample_rate=rate,
            steps=steps,
            accountant=privacy.accountant,
        )
    return PrivacyBudget(
        privacy.epsilon,
        delta,
        rate,
        steps,
        float(sigma),
        privacy.accountant,
        privacy.max_grad_norm,
        expected_batch,
        n_units,
    )


def privacy_figures(budget: PrivacyBudget, epsilon: float) -> dict[str, float | str]:
    """``metrics/train.json``'s ``dp.*``: the ε the accountant counts spent (``inf``
    without noise), its δ, and what it was computed from."""
    return {
        "dp.epsilon": round(epsilon, 4) if math.isfinite(epsilon) else "inf",
        "dp.target_epsilon": budget.target_epsilon,
        "dp.delta": float(f"{budget.delta:.6g}"),
        "dp.noise_multiplier": round(budget.noise_multiplier, 4),
        "dp.sample_rate": round(budget.sample_rate, 6),
        "dp.max_grad_norm": budget.max_grad_norm,
        "dp.accountant": budget.accountant,
        "dp.expected_batch": budget.expected_batch,
        "dp.units": budget.n_units,
    }
