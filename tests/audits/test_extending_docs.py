"""docs/extending/audits.md's worked example, run as the page writes it: its module's code,
registered the way its registry line says, selected by ``audit.audits`` and run by the audit
stage's runner on a tiny model; and the registry's own checks."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from audits.protocol import Audit, AuditContext, AuditInputs
from audits.registry import AUDITS, registry
from audits.result import AuditResult, audit_summary
from components.audit.config import AuditConfig
from components.audit.runner import run_audits
from components.core.errors import ParamsError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending" / "audits.md"
REGISTRY_SOURCE = Path(__file__).resolve().parents[2] / "audits" / "registry.py"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def page_blocks() -> list[str]:
    """The page's Python blocks: the example module, then its registry line."""
    return _PYTHON_BLOCK.findall(PAGE.read_text(encoding="utf-8"))


def example_module() -> types.ModuleType:
    """The example module, executed from the page's text."""
    module = types.ModuleType("audits.output_length")
    exec(compile(page_blocks()[0], str(PAGE), "exec"), module.__dict__)  # the docs' own code
    return module


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Audit:
    """The example's audit, in the registry for this test only (its one registry line)."""
    audit = example_module().OutputLengthAudit()
    monkeypatch.setitem(AUDITS, audit.name, audit)
    return audit


@pytest.fixture(scope="module")
def tiny_base(base_model_dir: Path) -> tuple[Any, Any]:
    from components.train import load_base

    return load_base(base_model_dir)


def example_inputs(heldout: int = 3) -> AuditInputs:
    from components.ingest.generate import generate_corpus

    corpus = generate_corpus(3 + heldout, 5)
    return AuditInputs(
        train_raw=corpus[:3],
        heldout_raw=corpus[3:],
        heldout_anonymized=corpus[3:],  # the example only prompts with them
        canaries=[],
        inventory=[],
        salt="salt",
    )


def test_the_registry_line_on_the_page_has_the_registrys_own_shape() -> None:
    _, registration = page_blocks()
    source = REGISTRY_SOURCE.read_text(encoding="utf-8")
    as_pii_output = registration.replace("output_length", "pii_output").replace(
        "OutputLengthAudit", "PiOutputAudit"
    )
    for line in as_pii_output.splitlines():
        assert line.strip() == "..." or line in source.splitlines(), line


def test_the_example_audit_runs_in_the_stage_and_reports(
    registered: Audit, tiny_base: tuple[Any, Any]
) -> None:
    model, tokenizer = tiny_base
    config = AuditConfig(audits=["output_length"], n_prompts=3, max_new_tokens=4)
    (result,) = run_audits(model, tokenizer, config=config, inputs=example_inputs())
    assert result.name == "output_length" and result.passed
    assert result.figures["n_outputs"] == 3
    assert 0 <= result.figures["n_empty"] <= 3
    summary = audit_summary([result], "raw")
    assert summary["passed"] is True and list(summary["audits"]) == ["output_length"]


def test_the_example_is_skipped_without_what_it_needs(
    registered: Audit, tiny_base: tuple[Any, Any]
) -> None:
    model, tokenizer = tiny_base
    config = AuditConfig(audits=["output_length"], n_prompts=3, max_new_tokens=4)
    assert run_audits(model, tokenizer, config=config, inputs=example_inputs(heldout=0)) == []


def test_an_unregistered_audit_is_a_params_error_naming_the_registered_ones() -> None:
    with pytest.raises(ParamsError, match=r"audit\.audits.*'pii_output', 'canary'"):
        AuditConfig(audits=["output_length"])


class _Named(Audit):
    def __init__(self, name: str, needs: tuple[str, ...] = ()) -> None:
        self.name = name  # type: ignore[misc]  # a ClassVar in real audits
        self.needs = needs  # type: ignore[misc]

    def run(self, context: AuditContext) -> AuditResult:
        raise AssertionError("not run")


def test_the_registry_rejects_a_second_audit_of_a_name_and_an_unknown_need() -> None:
    assert list(registry(_Named("a"), _Named("b", ("canaries",)))) == ["a", "b"]
    with pytest.raises(ValueError, match="two audits named 'a'"):
        registry(_Named("a"), _Named("a"))
    with pytest.raises(ValueError, match=r"needs \['canary_list'\]"):
        registry(_Named("a", ("canary_list",)))


def test_audits_run_in_the_registrys_order_whatever_the_params_order() -> None:
    ran: list[str] = []

    class Recorded(_Named):
        def run(self, context: AuditContext) -> AuditResult:
            ran.append(self.name)
            return AuditResult(self.name, True)

    with pytest.MonkeyPatch.context() as patch:
        for name in ("extraction", "pii_output"):
            patch.setitem(AUDITS, name, Recorded(name))
        config = AuditConfig(audits=["extraction", "pii_output"])
        results = run_audits(None, None, config=config, inputs=example_inputs())
    assert ran == ["pii_output", "extraction"] == [r.name for r in results]
