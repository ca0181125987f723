"""The one error hierarchy of veiltune; third-party exceptions are translated at the boundary."""

from __future__ import annotations


class VeiltuneError(Exception):
    """Base of every error veiltune raises on purpose; the CLI prints its message and exits 1."""

    exit_code = 1


class InputError(VeiltuneError):
    """A user-supplied file is missing, malformed, wrongly encoded or empty."""


class ParamsError(VeiltuneError):
    """params.yaml has an unknown key or a value that is not allowed."""


class GateFailed(VeiltuneError):
    """The residual-risk gate refused the corpus; nothing may be trained on it."""

    exit_code = 3


class LeakageDetected(VeiltuneError):
    """A leakage audit found personal information in what a trained model produces."""

    exit_code = 4


class BundleTampered(VeiltuneError):
    """A compliance bundle does not match its manifest: a file was edited, removed or added."""

    exit_code = 5


class BackendError(VeiltuneError):
    """A detection backend, model or service failed."""


class PromotionRefused(VeiltuneError):
    """A model version may not become champion: its gate or audit failed, or it is a baseline."""
