"""The utility profile's plan (the overrides of each run), variant names, and its CLI."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from components.core.errors import InputError, ParamsError
from components.core.stage import StageContext
from components.evaluate.commands import store_run
from components.evaluate.config import EvaluateConfig
from components.evaluate.profile import PlannedRun, Sizes, plan_runs, profile_sizes
from components.evaluate.stage import run_variant
from components.evaluate.variants import (
    canonical,
    display_order,
    variant_name,
    variant_overrides,
)
from components.stages import stage_context
from tests.pipeline_repo import REPO_ROOT
from veiltune.cli import main


def test_each_variant_and_seed_gets_its_overrides() -> None:
    runs = plan_runs(["oracle", "placeholder", "surrogate-lm"], [13, 14], sizes=Sizes(steps=5))
    assert [(r.variant, r.seed) for r in runs] == [
        ("oracle", 13),
        ("oracle", 14),
        ("placeholder", 13),
        ("placeholder", 14),
        ("surrogate-lm", 13),
        ("surrogate-lm", 14),
    ]
    assert runs[0].overrides == {"train.corpus": "raw", "train.seed": 13, "train.max_steps": 5}
    assert runs[3].overrides == {
        "train.corpus": "anonymized",
        "anonymize.replacement": "placeholder",
        "train.seed": 14,
        "train.max_steps": 5,
    }
    assert runs[4].overrides["anonymize.replacement"] == "surrogate"
    assert runs[4].overrides["anonymize.surrogate.method"] == "lm"
    assert runs[0].exp_run_args() == [
        "exp",
        "run",
        "-S",
        "train.corpus=raw",
        "-S",
        "train.seed=13",
        "-S",
        "train.max_steps=5",
        "evaluate",
    ]


def test_masked_trains_on_placeholders_whatever_params_say() -> None:
    (masked,) = plan_runs(["masked"], [1], sizes=Sizes())
    assert masked.overrides == {
        "train.corpus": "masked",
        "train.mask_loss_weight": 1.0,
        "anonymize.replacement": "placeholder",
        "train.seed": 1,
    }


def test_lists_reach_dvc_in_its_override_grammar_and_tasks_apply_to_every_variant() -> None:
    fragments, oracle = plan_runs(
        ["vocab_threshold:fragmented", "oracle"], [1], sizes=Sizes(tasks=("continuation",))
    )
    args = fragments.exp_run_args()
    assert "train.tasks=[continuation]" in args
    assert "anonymize.detectors=[vocab_threshold]" in args
    assert oracle.overrides["train.tasks"] == ["continuation"]
    assert "evaluate.tasks=[]" in args  # continuation is scored by perplexity alone
    mixed = Sizes(tasks=("summary", "continuation")).overrides()
    assert mixed["evaluate.tasks"] == ["summary"]
    with pytest.raises(ParamsError, match="evaluate.tasks"):
        EvaluateConfig(tasks=["continuation"])
    assert EvaluateConfig(tasks=[]).tasks == []  # perplexity alone


def test_presets_and_explicit_sizes() -> None:
    assert profile_sizes("default", Sizes()).overrides() == {}  # params.yaml's own sizes
    large = profile_sizes("large", Sizes(steps=2000))
    assert large.overrides() == {
        "train.max_steps": 2000,
        "ingest.n_conversations": 600,
        "ingest.heldout_fraction": 0.2,
        "evaluate.max_conversations": 120,
    }
    with pytest.raises(InputError, match="unknown profile 'huge'"):
        profile_sizes("huge", Sizes())


def test_an_unknown_variant_is_named_before_anything_runs() -> None:
    with pytest.raises(InputError, match="unknown variant 'surrogate-magic'"):
        plan_runs(["oracle", "surrogate-magic"], [13], sizes=Sizes())


@pytest.mark.parametrize(
    ("corpus", "replacement", "method", "variant"),
    [
        ("raw", "placeholder", None, "oracle"),
        ("masked", "placeholder", None, "masked"),
        ("anonymized", "placeholder", None, "placeholder"),
        ("anonymized", "type", None, "type"),
        ("anonymized", "surrogate", "embedding", "surrogate-embedding"),
        ("anonymized", "surrogate", "realistic", "surrogate-realistic"),
    ],
)
def test_variant_names(corpus: str, replacement: str, *, method: str | None, variant: str) -> None:
    assert variant_name(corpus, replacement, surrogate_method=method) == variant
    assert canonical(variant) == variant


@pytest.mark.parametrize(
    ("settings", "variant"),
    [
        ({"corpus": "masked", "mask_loss_weight": 0.0}, "masked-no-loss"),
        ({"corpus": "fragmented"}, "fragmented"),
        ({"corpus": "fragmented", "fragments_source": "raw"}, "fragmented-raw"),
        ({"detectors": ["allow_list"]}, "allow_list"),
        ({"detectors": ["entities", "lm_probability"]}, "entities+lm_probability"),
        ({"detectors": ["allow_list", "lm_probability"]}, "allow_list+lm_probability"),
        ({"detectors": ["vocab_threshold"], "corpus": "masked"}, "vocab_threshold:masked"),
        ({"detectors": ["lm_probability"], "corpus": "fragmented"}, "lm_probability:fragmented"),
        ({"detectors": ["allow_list"], "corpus": "raw"}, "oracle"),
    ],
)
def test_the_method_papers_variants_are_named_and_trained_by_their_params(
    settings: dict[str, Any], variant: str
) -> None:
    given = {"corpus": "anonymized", **settings}
    corpus = given.pop("corpus")
    assert variant_name(corpus, "placeholder", surrogate_method=None, **given) == variant
    overrides = variant_overrides(variant)
    assert overrides["train.corpus"] == corpus
    detectors = given.get("detectors", ["entities"])
    if corpus != "raw" and detectors != ["entities"]:
        assert overrides["anonymize.detectors"] == detectors
    else:
        assert "anonymize.detectors" not in overrides
    if corpus == "masked":
        assert overrides["train.mask_loss_weight"] == given.get("mask_loss_weight", 1.0)
    if corpus == "fragmented":  # fragments are language-modelling text: continuation only
        assert overrides["train.tasks"] == ["continuation"]
        assert overrides["train.fragments.source"] == given.get("fragments_source", "anonymized")


@pytest.mark.parametrize(
    "variant", ["allow_list:oracle", "magic:masked", "allow_list:allow_list", "fragmented-cooked"]
)
def test_a_variant_of_unknown_parts_is_refused(variant: str) -> None:
    with pytest.raises(InputError, match=f"unknown variant '{variant}'"):
        variant_overrides(variant)


def test_old_variant_names_read_as_new_ones() -> None:
    assert (canonical("anonymized"), canonical("raw")) == ("placeholder", "oracle")


@pytest.mark.parametrize(
    ("settings", "epsilon", "variant"),
    [
        ({}, 8.0, "placeholder@dp8"),
        (
            {"replacement": "surrogate", "surrogate_method": "realistic"},
            0.5,
            "surrogate-realistic@dp0.5",
        ),
        ({"corpus": "masked", "mask_loss_weight": 0.0}, 1.0, "masked-no-loss@dp1"),
        ({"corpus": "masked", "detectors": ["vocab_threshold"]}, 4.0, "vocab_threshold:masked@dp4"),
        ({"corpus": "raw"}, 2.5, "oracle@dp2.5"),
        ({}, 8.1234567, "placeholder@dp8.1234567"),  # never rounded into another budget
    ],
)
def test_a_dp_variant_is_named_apart_and_trained_with_its_epsilon(
    settings: dict[str, Any], *, epsilon: float, variant: str
) -> None:
    given = {"corpus": "anonymized", "replacement": "placeholder", **settings}
    corpus, replacement = given.pop("corpus"), given.pop("replacement")
    assert variant_name(corpus, replacement, dp_epsilon=epsilon, **given) == variant
    plain = variant_name(corpus, replacement, **given)
    assert plain != variant  # never reported as its non-DP namesake
    overrides = variant_overrides(variant)
    assert overrides == {
        **variant_overrides(plain),
        "train.privacy.enabled": True,
        "train.privacy.epsilon": epsilon,
    }


@pytest.mark.parametrize(
    ("variant", "why"),
    [
        ("placeholder@dp0", "a positive number"),
        ("placeholder@dp-1", "a positive number"),
        ("placeholder@dpinf", "a positive number"),
        ("placeholder@dp", "a positive number"),
        ("placeholder@dpeight", "a positive number"),
        ("placeholder@dp8.0", r"written like @dp8"),  # the stage would name its run @dp8
        ("fragmented@dp8", "a fragment mixes conversations"),
        ("magic@dp8", "expected one of"),
    ],
)
def test_a_dp_variant_without_a_budget_dp_can_train_is_refused(variant: str, why: str) -> None:
    with pytest.raises(InputError, match=f"unknown variant '{variant}'.*{why}"):
        variant_overrides(variant)


def test_dp_variants_follow_their_namesake_from_the_smallest_epsilon() -> None:
    shown = ["oracle", "placeholder@dp8", "base", "placeholder", "placeholder@dp1", "odd@dpx"]
    assert display_order(shown) == [
        "base",
        "placeholder",
        "placeholder@dp1",
        "placeholder@dp8",
        "oracle",
        "odd@dpx",
    ]


def test_a_planned_dp_run_reaches_params_through_dvc_and_evaluates_under_its_name(
    tmp_path: Path,
) -> None:
    """Plan → DVC's own ``-S`` code → params.yaml → the evaluate stage's variant name: the run
    store accepts a run only under the name it was planned as."""
    from dvc.utils.hydra import apply_overrides

    (run,) = plan_runs(["surrogate-realistic@dp0.5"], [13], sizes=Sizes(steps=5))
    params_file = tmp_path / "params.yaml"
    params_file.write_text((REPO_ROOT / "params.yaml").read_text())
    apply_overrides(params_file, run.exp_run_args()[3:-1:2])
    context = stage_context(params_file)
    assert context.setting("train.privacy.enabled") is True
    assert context.setting("train.privacy.epsilon") == 0.5
    assert run_variant(context) == run.variant


def _context(
    anonymize: object, corpus: str = "anonymized", *, epsilon: float | None = None
) -> StageContext:
    train = SimpleNamespace(
        corpus=corpus,
        mask_loss_weight=1.0,
        fragments=SimpleNamespace(source="anonymized"),
        privacy=SimpleNamespace(enabled=epsilon is not None, epsilon=epsilon or 8.0),
    )
    anonymize.detectors = ["entities"]  # type: ignore[attr-defined]
    return StageContext(Path("params.yaml"), {}, {"train": train, "anonymize": anonymize})


def test_the_stage_names_its_variant_from_params() -> None:
    assert run_variant(_context(SimpleNamespace(replacement="placeholder"))) == "placeholder"
    lm = SimpleNamespace(replacement="surrogate", surrogate=SimpleNamespace(method="lm"))
    assert run_variant(_context(lm)) == "surrogate-lm"
    raw = _context(lm, corpus="raw")
    assert run_variant(raw) == "oracle"
    private = _context(SimpleNamespace(replacement="placeholder"), epsilon=4.0)
    assert run_variant(private) == "placeholder@dp4"


def test_a_run_is_stored_only_when_it_evaluated_what_was_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "data" / "evaluate").mkdir(parents=True)
    (tmp_path / "data" / "evaluate" / "per_conversation.jsonl").write_text("")
    evaluated = '{"variant": "oracle", "train_seed": 13, "adapter": {}}'
    (tmp_path / "metrics" / "evaluate.json").write_text(evaluated)
    folder = tmp_path / "runs" / "oracle" / "seed-13"
    store_run(PlannedRun("oracle", 13, {}), folder)
    assert (folder / "evaluate.json").read_text() == evaluated
    assert (folder / "per_conversation.jsonl").is_file()
    with pytest.raises(InputError, match="variant oracle seed 13, but the run was masked seed 13"):
        store_run(PlannedRun("masked", 13, {}), tmp_path / "runs" / "masked" / "seed-13")


def test_the_cli_explains_the_profile_and_refuses_an_unknown_variant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["utility-profile", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--profile {default,large}" in out and "--heldout-fraction" in out and "GPU" in out
    assert main(["utility-profile", "--variants", "oracle", "placebo", "--seeds", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown variant 'placebo'" in err
