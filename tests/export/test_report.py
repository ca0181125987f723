from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from components.export.facts import ExportFacts, audit_rows, decision, threshold_pairs
from components.export.model_card import model_card_markdown
from components.export.report import GATE_PAGE, SECTIONS, compliance_report_html
from tests.export.fixtures import (
    AUDIT_OLD,
    LINEAGE,
    PARAMS,
    REGISTRY,
    stage_metrics,
)

HISTOGRAM = b"\x89PNG\r\n\x1a\nhistogram-bytes"
UTILITY_PNG = b"\x89PNG\r\n\x1a\nutility-bytes"
UTILITY_REPORT = {
    "variants": {
        "oracle": {"run": "exp-oracle", "metrics": {"summary.rouge1": 0.38}},
        "anonymized": {"run": "exp-anon", "metrics": {"summary.rouge1": 0.31}},
    },
    "comparison": {"rouge1_gap_to_oracle": 0.175, "within_5pct_of_oracle": False},
}


def facts(audit: dict[str, Any] | None = None, **extra: Any) -> ExportFacts:
    return ExportFacts(stage_metrics(audit), PARAMS, REGISTRY, LINEAGE, **extra)


class _Page(HTMLParser):
    """Sections (id → text) and every URL-bearing attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, list[str]] = {}
        self.current: str | None = None
        self.urls: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = dict(attrs)
        if tag == "section":
            self.current = values.get("id")
            self.sections[str(self.current)] = []
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "action")]

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.current = None

    def handle_data(self, data: str) -> None:
        if self.current:
            self.sections[self.current].append(data)


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    return parser


def section_text(parsed: _Page, key: str) -> str:
    return " ".join(parsed.sections[key])


def test_every_section_in_order_with_its_facts() -> None:
    page = compliance_report_html(facts(), HISTOGRAM, utility_png=None)
    parsed = parse(page)
    assert list(parsed.sections) == [key for key, _ in SECTIONS]
    assert "300" in section_text(parsed, "data") and "voicemail" in section_text(parsed, "data")
    assert "PERSON_NAME" in section_text(parsed, "removed")
    assert "4587" in section_text(parsed, "removed")
    risk = section_text(parsed, "residual-risk")
    assert "μ+σ = 0.74 against threshold 5" in risk and "pass" in risk
    utility = section_text(parsed, "utility")
    assert "summary.rouge1" in utility and "0.18" in utility  # adapter 0.33 - base 0.15
    assert "No privacy–utility report was present" in utility
    decided = section_text(parsed, "decision")
    assert "not champion" in decided and "failed audit(s): membership" in decided
    assert "currently points at version 2" in decided
    assert "abc123" in section_text(parsed, "lineage")


def test_audits_render_generically_with_thresholds_and_verdicts() -> None:
    parsed = parse(compliance_report_html(facts(), HISTOGRAM, utility_png=None))
    audits = section_text(parsed, "audits")
    for name in ("pii_output", "canary", "extraction", "membership"):
        assert name in audits
    assert "ROC AUC 0.81 (0.5 = chance)" in audits and "limit 0.7" in audits
    assert "2.1 bits at 16 repetitions" in audits  # canary exposure per repetition
    renamed = stage_metrics()["audit"]
    renamed["audits"]["novel_attack"] = renamed["audits"].pop("canary")
    assert "novel_attack" in section_text(
        parse(compliance_report_html(facts(renamed), None, utility_png=None)), "audits"
    )


def test_the_old_audit_shape_still_renders() -> None:
    parsed = parse(compliance_report_html(facts(AUDIT_OLD), HISTOGRAM, utility_png=None))
    audits = section_text(parsed, "audits")
    assert "pii_output" in audits
    assert "1 value(s) of the PI inventory repeated in 1 of 24 outputs" in audits
    assert "(ORGANIZATION_NAME_SPEAKER 1), limit 0." in audits
    (row,) = audit_rows(AUDIT_OLD)
    assert row.passed is False and row.thresholds == {"max_leaks": 0}


def test_threshold_pairs_match_figures_by_name() -> None:
    pairs = {
        (p.audit, p.figure, p.threshold)
        for r in audit_rows(stage_metrics()["audit"])
        for p in threshold_pairs(r)
    }
    assert pairs == {
        ("pii_output", "n_leaks", "max_leaks"),
        ("canary", "canary_exposure", "max_exposure"),
        ("extraction", "extraction_rate", "max_extraction_rate"),
        ("membership", "mia_auc", "max_auc"),
    }
    (old,) = audit_rows(AUDIT_OLD)
    assert [p.figure for p in threshold_pairs(old)] == ["n_leaks"]  # not n_outputs_with_leaks


def images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def test_images_are_embedded_and_nothing_is_fetched() -> None:
    page = compliance_report_html(
        facts(utility_report=UTILITY_REPORT), HISTOGRAM, utility_png=UTILITY_PNG
    )
    embedded = images(page)
    assert HISTOGRAM in embedded and UTILITY_PNG in embedded
    assert len(embedded) == 4  # histogram, audit chart, utility chart, utility report chart
    assert all(png.startswith(b"\x89PNG") for png in embedded)
    parsed = parse(page)
    links = [url for url in parsed.urls if not url.startswith("data:image/png;base64,")]
    assert links == ["model_card.html", GATE_PAGE]  # relative: beside it in the bundle
    assert not parsed.tags & {"script", "link", "iframe", "object"}
    assert not re.search(r"https?://|//[a-z]", re.sub(r"base64,[^\"]+", "", page))


def test_the_utility_report_is_shown_when_present() -> None:
    page = compliance_report_html(
        facts(utility_report=UTILITY_REPORT), HISTOGRAM, utility_png=UTILITY_PNG
    )
    utility = section_text(parse(page), "utility")
    assert "exp-oracle" in utility and "within_5pct_of_oracle" in utility
    assert "No privacy–utility report" not in utility


def test_strings_from_data_are_escaped() -> None:
    metrics = stage_metrics()
    metrics["ingest"]["by_context"] = {"<script>alert(1)</script>": 3}
    page = compliance_report_html(
        ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE), HISTOGRAM, utility_png=None
    )
    assert "<script>" not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize(
    ("corpus", "gate_passed", "audit_passed", "reason"),
    [
        ("raw", True, True, "never promoted"),
        ("anonymized", False, True, "failed the residual-risk gate"),
        ("anonymized", True, True, "passed every audit"),
    ],
)
def test_the_decision_reason(
    corpus: str, gate_passed: bool, *, audit_passed: bool, reason: str
) -> None:
    audit = {**stage_metrics()["audit"], "passed": audit_passed}
    decided = decision({}, REGISTRY, gate={"passed": gate_passed}, audit=audit, train_corpus=corpus)
    assert reason in decided.reason
    stated = decision(
        {"decision_reason": "stated by register"},
        REGISTRY,
        gate={},
        audit=audit,
        train_corpus=corpus,
    )
    assert stated.reason == "stated by register"


def test_the_champion_follows_the_live_aliases() -> None:
    live = {**REGISTRY, "aliases": ["candidate", "champion"], "champion_version": "3"}
    page = compliance_report_html(
        ExportFacts(stage_metrics(), PARAMS, live, LINEAGE), None, utility_png=None
    )
    assert 'This version is <span class="pass">champion</span>' in page


def test_the_model_card_has_every_section() -> None:
    card = model_card_markdown(
        facts(adapter_config={"peft_type": "LORA", "r": 32, "target_modules": ["q_proj"]})
    )
    for heading in (
        "# Model card: veiltune-adapter version 3",
        "## Model details",
        "## Training",
        "## Training data and lineage",
        "## Intended use",
        "## Evaluation",
        "## Privacy audits",
        "## Limitations",
    ):
        assert heading in card
    assert "adapter r: 32" in card and "adapter target_modules: q_proj" in card
    assert "| membership | fail | Membership attack: ROC AUC 0.81 (0.5 = chance)" in card
    assert "| summary.rouge1 | 20 | 0.33 | 0.15 |" in card
    assert "embedded synthetic corpus" in card


PLAIN_SIGHT_FIGURES = {
    "n_with_residual": 12,
    "anonymized": {
        "n_conversations": 12,
        "n_words": 90,
        "n_real_words": 14,
        "real_only_share": 0.0833,
        "rarity_auc": 0.61,
        "n_rarity_scored": 90,
        "lm_auc": 0.55,
        "n_lm_scored": 88,
    },
    "placeholders": {
        "n_conversations": 12,
        "n_words": 30,
        "n_real_words": 14,
        "real_only_share": 0.5833,
        "rarity_auc": 0.92,
        "n_rarity_scored": 30,
        "lm_auc": 0.81,
        "n_lm_scored": 30,
    },
}


def test_plain_sight_is_shown_by_view_in_the_report_and_the_model_card() -> None:
    audit = stage_metrics()["audit"]
    audit["audits"]["plain_sight"] = {"passed": True, "figures": PLAIN_SIGHT_FIGURES}
    audits = section_text(
        parse(compliance_report_html(facts(audit), None, utility_png=None)), "audits"
    )
    assert "Hiding in plain sight" in audits and "LM AUC" in audits
    card = model_card_markdown(facts(audit))
    assert "| anonymized | 12 | 90 | 14 | 0.0833 | 0.61 | 0.55 |" in card
    assert "| placeholders | 12 | 30 | 14 | 0.5833 | 0.92 | 0.81 |" in card

    not_computed = {"n_with_residual": 0, "not_computed": "no real name word in clear"}
    audit["audits"]["plain_sight"] = {"passed": True, "figures": not_computed}
    audits = section_text(
        parse(compliance_report_html(facts(audit), None, utility_png=None)), "audits"
    )
    assert "Hiding in plain sight: not measured (no real name word in clear)." in audits
    assert "LM AUC" not in audits
    assert "not measured (no real name word in clear)" in model_card_markdown(facts(audit))


SAMPLE = "components/ingest/samples/dialogsum/dialogsum.dev.sample.jsonl"


def with_datasets(by_dataset: dict[str, int], ingest: dict[str, Any]) -> ExportFacts:
    metrics = stage_metrics()
    metrics["ingest"]["by_dataset"] = by_dataset
    return ExportFacts(metrics, {**PARAMS, "ingest": ingest}, REGISTRY, LINEAGE)


def data_texts(facts: ExportFacts) -> tuple[str, str]:
    """The report's data section and the model card's training data section."""
    card = model_card_markdown(facts)
    data = card[card.index("## Training data") : card.index("## Intended use")]
    return section_text(parse(compliance_report_html(facts, None, utility_png=None)), "data"), data


def test_dialogsum_is_named_with_its_source_and_licence_when_the_corpus_holds_it() -> None:
    ingest = {"corpus_path": None, "dialogsum": {"path": SAMPLE, "max_dialogues": 200}}
    facts = with_datasets({"dialogsum": 200, "main": 300}, ingest)
    for text in data_texts(facts):
        assert "embedded generated corpus" in text and "Apache-2.0" in text
        assert "DialogSum" in text and "CC BY-NC-SA 4.0" in text
        assert "github.com/cylnlp/dialogsum" in text and SAMPLE in text
    card = model_card_markdown(facts)
    assert "| 200 |" in card and "| 300 |" in card
    assert "Trained on DialogSum (CC BY-NC-SA 4.0)" in card  # limitations: non-commercial


def test_without_dialogsum_only_the_generated_corpus_is_named() -> None:
    facts = with_datasets({"main": 300}, {"corpus_path": None, "dialogsum": {"path": None}})
    for text in data_texts(facts):
        assert "embedded generated corpus" in text and "Apache-2.0" in text
        assert "DialogSum" not in text and "CC BY-NC" not in text
    assert "DialogSum" not in model_card_markdown(facts)


def test_a_user_corpus_is_named_by_its_path_and_no_licence_is_invented() -> None:
    ingest = {"corpus_path": "calls.jsonl", "dialogsum": {"path": SAMPLE}}
    facts = with_datasets({"main": 40, "dialogsum": 10}, ingest)
    for text in data_texts(facts):
        assert "calls.jsonl" in text and "as its owner grants" in text
        assert "generated" not in text and "CC BY-NC-SA 4.0" in text


@pytest.mark.parametrize(
    ("by_dataset", "statement"),
    [
        ({"main": 40}, "Public datasets mixed into the corpus: none."),
        (
            {"main": 40, "dialogsum": 10},
            "Public datasets mixed into the corpus: DialogSum (10 conversations; "
            "CC BY-NC-SA 4.0, non-commercial use only).",
        ),
    ],
)
def test_the_model_card_says_which_public_datasets_were_mixed_in(
    by_dataset: dict[str, int], statement: str
) -> None:
    """What ingest mixed in (``by_dataset``), not what params.yaml's path points at."""
    facts = with_datasets(by_dataset, {"corpus_path": "calls.jsonl", "dialogsum": {"path": SAMPLE}})
    card = model_card_markdown(facts)
    data = card[card.index("## Training data") : card.index("## Intended use")]
    assert statement in data
    assert ("Trained on DialogSum" in card) == ("dialogsum" in by_dataset)


def test_the_judged_summaries_have_a_section_per_setting() -> None:
    metrics = stage_metrics()
    judged = {
        "sensitive.private_summary.privacy": 4.5,
        "sensitive.private_summary.completeness": 3.25,
        "sensitive.private_summary.acceptable_rate": 0.5,
        "sensitive.private_summary.healthcare.privacy": 2.0,
        "sensitive.private_summary.healthcare.acceptable_rate": 0.0,
    }
    metrics["evaluate"]["adapter"] = {**metrics["evaluate"]["adapter"], **judged}
    metrics["evaluate"]["base"] = {
        **metrics["evaluate"]["base"],
        "sensitive.private_summary.privacy": 3.75,
    }
    page = compliance_report_html(
        ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE), HISTOGRAM, utility_png=None
    )
    text = section_text(parse(page), "sensitive")
    assert "sensitive.private_summary" in text and "healthcare" in text
    assert text.index("all settings") < text.index("healthcare")  # overall row first
    assert "4.5" in text and "3.75" in text and "3.25" in text
    # without judged summaries the section says how to get them
    plain = section_text(
        parse(compliance_report_html(facts(), HISTOGRAM, utility_png=None)), "sensitive"
    )
    assert "No privacy-preserving summary was judged" in plain


@pytest.mark.parametrize(
    ("ner", "named", "absent"),
    [
        ({}, ["veiltune's conversational NER", "WNUT-17", "CC BY 4.0"], ["Rampart"]),
        ({"model": "rampart"}, ["Rampart", "National Design Studio", "CC BY 4.0"], ["WNUT"]),
        ({"model": None}, [], ["Rampart", "WNUT", "CC BY 4.0"]),
    ],
    ids=["conversational", "rampart", "ner-off"],
)
def test_the_models_that_detected_pi_are_named_with_their_licences(
    ner: dict[str, Any], named: list[str], *, absent: list[str]
) -> None:
    params = {**PARAMS, "anonymize": {**PARAMS.get("anonymize", {}), "ner": ner}}
    facts = ExportFacts(stage_metrics(), params, REGISTRY, LINEAGE)
    removed = section_text(parse(compliance_report_html(facts, None, utility_png=None)), "removed")
    card = model_card_markdown(facts)
    for text in (removed, card):
        assert "en_core_web_sm" in text and "MIT" in text
        for fragment in named:
            assert fragment in text, fragment
        for fragment in absent:
            assert fragment not in text, fragment


def test_the_report_and_the_model_card_state_when_the_bundle_was_made() -> None:
    lineage = {**LINEAGE, "created_at": "2026-11-27T17:08:17Z"}
    made = ExportFacts(stage_metrics(), PARAMS, REGISTRY, lineage)
    page = compliance_report_html(made, None, utility_png=None)
    assert page.index("Created 2026-11-27T17:08:17Z (UTC)") < page.index('<div id="verdict"')
    assert "2026-11-27T17:08:17Z" in section_text(parse(page), "lineage")
    assert "- created (UTC): 2026-11-27T17:08:17Z" in model_card_markdown(made)


def test_the_risk_section_says_which_source_scored_what_and_the_estimators_recall() -> None:
    metrics = stage_metrics()
    metrics["risk"] = {
        **metrics["risk"],
        "source": "mixed",
        "n_ground_truth": 300,
        "n_estimate": 200,
        "estimator_agreement": {"recall": 0.47, "conversation_recall": 0.5},
    }
    page = compliance_report_html(
        ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE), None, utility_png=None
    )
    risk = section_text(parse(page), "residual-risk")
    assert "300 of 500 conversations scored by ground truth" in risk
    assert "200 by the automatic estimator" in risk and "(recall 0.47)" in risk
