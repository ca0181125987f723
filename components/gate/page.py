"""The gate's validation page: veiltune's own HTML of the Great Expectations result.

Why not GX's Data Docs. The pages Great Expectations 1.x renders load 9 scripts and 5
stylesheets (Bootstrap, jQuery, bootstrap-table, Vega, Font Awesome, ...) from five CDNs, a
logo from a vendor bucket, and link a vendor newsletter: offline an auditor sees an unstyled
page whose collapsed sections never open, and online opening it tells third parties. None
of those assets ships inside the ``great_expectations`` package, so vendoring them would
mean downloading and keeping 14 third-party files and their licences in step with each GX
release, and rewriting the links of GX's templates after every render. The verdict needs
none of that machinery: this page states, from ``validation.json``, each expectation in
GX's own words (its prescriptive renderer, the custom μ+σ rule and per-context conditions
included), its verdict, what it observed, and the run's identity (suite, time, GX version,
data fingerprint). One file, inline CSS, no script, link or external resource: it renders
completely offline and requests nothing, like every page veiltune writes. The page is the
template ``templates/validation.html``, autoescaped.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.core.errors import BackendError
from components.core.html import Pages

# A rule longer than this (a value set of every conversation id) is shown folded.
_FOLD_CHARS = 240
_COUNT_KEYS = ("element_count", "missing_count", "unexpected_count", "unexpected_percent")
_PAGES = Pages("components.gate")


@dataclass(frozen=True)
class ExpectationRow:
    """One expectation's outcome as the page shows it.

    ``rule`` is GX's prescriptive sentence (or the type and its arguments when GX has no
    renderer for it); ``observed`` the observed value, or the counts when there is none.
    """

    rule: str
    expectation: str
    success: bool
    observed: Any
    details: Mapping[str, Any] = field(default_factory=dict)
    unexpected: Sequence[Any] = ()
    error: str | None = None


def expectation_rows(validation: Mapping[str, Any]) -> list[ExpectationRow]:
    """The expectations of a suite validation result (``to_json_dict`` form), in its order.

    Raises:
        BackendError: GX's renderer failed on an expectation.
    """
    return [_row(result) for result in validation.get("results") or []]


def _row(result: Mapping[str, Any]) -> ExpectationRow:
    config = result.get("expectation_config") or {}
    outcome = result.get("result") or {}
    observed = outcome.get("observed_value")
    if observed is None:
        observed = {k: outcome[k] for k in _COUNT_KEYS if k in outcome} or None
    messages = [
        str(info.get("exception_message"))
        for info in _exception_infos(result.get("exception_info") or {})
        if info.get("raised_exception")
    ]
    return ExpectationRow(
        rule=rule_text(config),
        expectation=str(config.get("type")),
        success=bool(result.get("success")),
        observed=observed,
        details=dict(outcome.get("details") or {}),
        unexpected=list(outcome.get("partial_unexpected_list") or []),
        error="; ".join(dict.fromkeys(messages)) or None,
    )


def _exception_infos(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Exception records of a result: flat, or keyed by the metric that raised."""
    if "raised_exception" in info:
        return [info]
    return [value for value in info.values() if isinstance(value, Mapping)]


def rule_text(config: Mapping[str, Any]) -> str:
    """An expectation's rule in GX's words ("score values must be greater than or equal to
    0."), from its serialized configuration; its type and arguments when GX has no
    prescriptive renderer for it.

    Raises:
        BackendError: GX's renderer failed.
    """
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )
    from great_expectations.expectations.registry import get_renderer_impl
    from great_expectations.render import LegacyRendererType

    import components.gate.expectations  # noqa: F401  (registers the μ+σ renderer)

    kind = str(config.get("type"))
    kwargs = {k: v for k, v in (config.get("kwargs") or {}).items() if k != "batch_id"}
    renderer = get_renderer_impl(kind, LegacyRendererType.PRESCRIPTIVE)
    if renderer is None:
        return f"{kind}({', '.join(f'{k}={_param(v)}' for k, v in sorted(kwargs.items()))})"
    try:
        rendered = renderer[1](configuration=ExpectationConfiguration(type=kind, kwargs=kwargs))
    except Exception as exc:  # GX renderers raise anything; name the expectation
        raise BackendError(f"great_expectations could not render {kind}: {exc}") from exc
    blocks = rendered if isinstance(rendered, list) else [rendered]
    return " ".join(_filled(block) for block in blocks).strip()


def _filled(block: Any) -> str:
    """A rendered string template with its ``$params`` written in."""
    content = block.to_json_dict() if hasattr(block, "to_json_dict") else dict(block)
    template = content.get("string_template") or {}
    params = {k: _param(v) for k, v in (template.get("params") or {}).items()}
    return string.Template(str(template.get("template", ""))).safe_substitute(params)


def _param(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(_param(v) for v in value)
    return str(value)


def validation_page_html(validation: Mapping[str, Any]) -> str:
    """The gate's validation result as one self-contained HTML page (see the module doc).

    Args:
        validation: the suite validation result as ``data/gate/validation.json`` holds it.
    """
    suite = str(validation.get("suite_name") or "residual_risk_gate")
    return _PAGES.render(
        "validation.html",
        title=f"Residual-risk gate: {suite}",
        success=bool(validation.get("success")),
        run_facts=_run_facts(validation),
        rows=[_shown(row) for row in expectation_rows(validation)],
    )


def _run_facts(validation: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of the run's identity: counts, time, data, fingerprint, GX version."""
    meta = validation.get("meta") or {}
    statistics = validation.get("statistics") or {}
    batch = meta.get("active_batch_definition") or {}
    markers = meta.get("batch_markers") or {}
    items = [
        ("expectations evaluated", statistics.get("evaluated_expectations")),
        ("successful", statistics.get("successful_expectations")),
        ("unsuccessful", statistics.get("unsuccessful_expectations")),
        ("validated at", meta.get("validation_time") or (meta.get("run_id") or {}).get("run_time")),
        ("data", f"{batch.get('datasource_name')} / {batch.get('data_asset_name')}"),
        ("data fingerprint", markers.get("pandas_data_fingerprint")),
        ("Great Expectations version", meta.get("great_expectations_version")),
    ]
    return [(label, _value(value)) for label, value in items]


@dataclass(frozen=True)
class _ShownRow:
    """An expectation's row as the page writes it: every value already a string.

    ``opening`` is the start of a long rule (every conversation id), shown folded; None when
    the rule is short enough to show whole.
    """

    rule: str
    opening: str | None
    success: bool
    observed: str
    details: str | None
    unexpected: str | None
    error: str | None
    expectation: str


def _shown(row: ExpectationRow) -> _ShownRow:
    long = len(row.rule) > _FOLD_CHARS
    return _ShownRow(
        rule=row.rule,
        opening=row.rule[:_FOLD_CHARS].rsplit(" ", 1)[0] if long else None,
        success=row.success,
        observed=_value(row.observed),
        details=_value(row.details) if row.details else None,
        unexpected=_value(list(row.unexpected)) if row.unexpected else None,
        error=row.error,
        expectation=row.expectation,
    )


def _value(value: Any) -> str:
    """A value for the page: floats to 6 significant digits, mappings as ``k: v``."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value) or "none"
    return str(value)
