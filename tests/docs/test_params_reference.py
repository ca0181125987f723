"""The params reference is generated from the config classes: every key with its type, its
default, the comment beside it in the code, and what its check allows."""

from __future__ import annotations

import dataclasses

import pytest

from components.anonymize.config import AnonymizeConfig
from components.gate.config import GateConfig
from components.stages import STAGES
from docs.hooks.generated_pages import generated
from docs.hooks.params_reference import allowed_values, field_comments, params_reference


def test_every_key_of_every_stage_has_a_row_with_its_default() -> None:
    page = params_reference()
    for stage in STAGES:
        assert f"## {stage.name}\n" in page
        for item in dataclasses.fields(stage.config):
            assert f"| `{stage.name}.{item.name}` |" in page, f"{stage.name}.{item.name}"
    assert "| `gate.threshold` | `float` | `5.0` |" in page
    assert '| `anonymize.dlp.min_likelihood` | `str` | `"POSSIBLE"` |' in page


def test_comments_above_and_beside_a_field_are_its_description() -> None:
    comments = field_comments(GateConfig)
    assert comments["per_context"] == "also require mu + sigma < threshold within each context"
    assert comments["known_contexts"] == "every conversation's context must be one of these"
    anonymize = field_comments(AnonymizeConfig)
    assert anonymize["cluster"].startswith("null: in this process (or `workers` local processes)")


def test_allowed_values_are_the_checks_own_words() -> None:
    import components.anonymize.config as module

    allowed = allowed_values(module)
    assert allowed["anonymize.replacement"] == ("one of: placeholder, mask, type, surrogate",)
    # a value only known at run time is shown as an ellipsis, not guessed
    assert allowed["anonymize.dlp.project"] == (
        "the Google Cloud project to call DLP in (anonymize.backend: …)",
    )


def test_a_page_marker_is_filled_and_a_typo_is_an_error() -> None:
    assert "| `train.max_steps` |" in generated("# Params\n\n<!-- generated: params -->\n")
    with pytest.raises(ValueError, match=r"no generator \(known: params, results\)"):
        generated("<!-- generated: parms -->")
