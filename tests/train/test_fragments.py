"""The fragmented corpus (``train.corpus: fragmented``): chunks, the mixing rule, the split."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest

from components.core.config import stage_config
from components.core.corpus import Conversation, Turn
from components.core.errors import ParamsError
from components.core.placeholders import ANY_PLACEHOLDER
from components.train.config import FragmentsConfig, TrainConfig
from components.train.fragments import (
    Chunk,
    FragmentExample,
    build_fragments,
    chunk_conversations,
    examples_linking_values,
    load_chunker,
    mix_chunks,
)
from components.train.lora import corpus_examples
from components.train.tasks import eval_conversations

if TYPE_CHECKING:
    from spacy.language import Language

SENTENCES = (
    "The customer wants to cancel the premium plan.",
    "I will send the new invoice to your billing address tomorrow.",
    "She didn't pick up the replacement card at the branch.",
    "We have refunded the second charge on your account.",
    "Could you confirm the last four digits of the card?",
    "The technician fixed the broken router in the kitchen.",
)


@pytest.fixture(scope="module")
def nlp() -> Language:
    return load_chunker(FragmentsConfig().spacy_model)


def corpus(n: int = 20) -> list[Conversation]:
    """Short calls, each with placeholders and sentences of its own."""
    return [
        Conversation(
            f"c{i}",
            (
                Turn("[PERSON_NAME_1]", f"Hi, this is [PERSON_NAME_1] calling about order {i}."),
                Turn("Agent", SENTENCES[i % len(SENTENCES)]),
                Turn("[PERSON_NAME_1]", SENTENCES[(i + 1) % len(SENTENCES)]),
                Turn("Agent", "Please call [PERSON_NAME_2] at [PHONE_NUMBER_1] after lunch."),
            ),
        )
        for i in range(n)
    ]


def test_chunks_are_noun_chunks_and_verb_phrases(nlp: Language) -> None:
    call = Conversation("k", (Turn("[PERSON_NAME_1]", SENTENCES[0]),))
    chunks = chunk_conversations([call], nlp, max_words=6)
    nouns = [c.text for c in chunks if c.kind == "noun"]
    verbs = [c.text for c in chunks if c.kind == "verb"]
    assert nouns == ["The customer", "the premium plan"]
    # A verb with its auxiliary and its short direct object.
    assert "to cancel the premium plan" in verbs
    assert all(c.conversation_id == "k" for c in chunks)
    assert not any("PERSON" in c.text for c in chunks)  # speaker names are not text


def test_long_chunks_are_cut_and_placeholders_never_are(nlp: Language) -> None:
    text = (
        "My old friend [PERSON_NAME_1] from the big regional [ORGANIZATION_NAME_1] office "
        "near [LOCATION_2] didn't call back."
    )
    chunks = chunk_conversations([Conversation("p", (Turn("A", text),))], nlp, max_words=3)
    assert chunks and all(c.words <= 3 and len(c.text.split()) <= 3 for c in chunks)
    placeholders = [p for c in chunks for p in ANY_PLACEHOLDER.findall(c.text)]
    assert {"[PERSON_NAME_1]", "[ORGANIZATION_NAME_1]", "[LOCATION_2]"} <= set(placeholders)
    for chunk in chunks:  # what is left of a chunk without its placeholders has no piece
        rest = ANY_PLACEHOLDER.sub("", chunk.text)
        assert "[" not in rest and "]" not in rest and "Zqxvph" not in chunk.text
    # A long noun chunk is cut into near-equal pieces, whole at a larger bound.
    texts = [c.text for c in chunks]
    assert "the big" in texts and "regional [ORGANIZATION_NAME_1] office" in texts
    whole = chunk_conversations([Conversation("p", (Turn("A", text),))], nlp, max_words=6)
    assert "the big regional [ORGANIZATION_NAME_1] office" in [c.text for c in whole]


def test_no_example_holds_two_chunks_of_one_conversation(nlp: Language) -> None:
    config = FragmentsConfig(max_chunk_words=4, chunks_per_example=5)
    fragments = build_fragments(corpus(), config, eval_fraction=0.0, seed=13, nlp=nlp)
    assert len(fragments.train) > 10 and fragments.evaluation == []
    for example in fragments.train:
        assert len(example.chunks) == 5 and len(set(example.source_ids)) == 5
        assert all(c.words <= 4 and len(c.text.split()) <= 4 for c in example.chunks)
    stats = fragments.stats
    assert stats.n_chunks == 5 * stats.n_examples + stats.dropped_chunks
    assert 1 <= stats.mean_chunk_words <= 4
    assert build_fragments(corpus(), config, eval_fraction=0.0, seed=13, nlp=nlp) == fragments
    assert (
        build_fragments(corpus(), config, eval_fraction=0.0, seed=14, nlp=nlp).train
        != fragments.train
    )


def test_fragment_examples_are_continuation_examples(nlp: Language) -> None:
    config = FragmentsConfig(chunks_per_example=4)
    fragments = build_fragments(corpus(), config, eval_fraction=0.0, seed=13, nlp=nlp)
    split = fragments.training_examples()
    assert len(split.train) == len(fragments.train)
    for fragment, example in zip(fragments.train, split.train, strict=True):
        instruction, _, asked = example.prompt.partition("\n\n")
        assert (example.task, instruction) == ("continuation", "Continue this call transcript.")
        lines = [c.text for c in fragment.chunks]
        assert asked.split("\n") == lines[:2] and example.target.split("\n") == lines[2:]
        assert example.sources == fragment.source_ids
    assert split.trained_ids == {cid for e in fragments.train for cid in e.source_ids}
    assert len(split.trained_ids) > 4  # the sources, not the examples' own ids


def test_eval_examples_come_from_eval_conversations_only(nlp: Language) -> None:
    calls = corpus()
    config = FragmentsConfig(chunks_per_example=3)
    fragments = build_fragments(calls, config, eval_fraction=0.3, seed=13, nlp=nlp)
    held = eval_conversations([c.id for c in calls], 0.3, seed=13)
    assert len(held) >= 3 and fragments.evaluation and fragments.train
    assert all(set(e.source_ids) <= held for e in fragments.evaluation)
    assert not any(set(e.source_ids) & held for e in fragments.train)
    split = fragments.training_examples()
    assert split.eval_ids <= held and not split.trained_ids & split.eval_ids


def test_leftovers_that_break_the_rule_are_dropped_and_counted() -> None:
    chunks = [Chunk("a", f"a{i}", "noun", 1) for i in range(5)]
    chunks += [Chunk("b", "b0", "noun", 1), Chunk("c", "c0", "noun", 1)]
    examples, dropped = mix_chunks(chunks, 2, rng=random.Random(13))
    # Only two pairs of different conversations exist: a with b, a with c.
    assert sorted(sorted(e.source_ids) for e in examples) == [["a", "b"], ["a", "c"]]
    assert dropped == 3


def test_examples_linking_two_values_of_one_conversation_are_counted(nlp: Language) -> None:
    values = {"a": ["Pam Beesly", "Pam", "555-1234"], "b": ["Dwight"]}

    def example(*chunks: tuple[str, str]) -> FragmentExample:
        return FragmentExample(tuple(Chunk(cid, text, "noun", 2) for cid, text in chunks))

    assert examples_linking_values([example(("a", "call Pam Beesly at 555-1234"))], values) == 1
    assert examples_linking_values([example(("a", "Pam Beesly"), ("b", "Dwight"))], values) == 0
    assert examples_linking_values([example(("a", "Pam Beesly"), ("a", "555-1234"))], values) == 1
    # Name and street of each call sit in different turns: no chunk holds both.
    calls = [
        Conversation(
            f"r{i}",
            (Turn("A", f"My name is Pam{i} Beesly."), Turn("B", f"I moved to Elm{i} Street.")),
        )
        for i in range(12)
    ]
    raw_values = {f"r{i}": [f"Pam{i} Beesly", f"Elm{i} Street"] for i in range(12)}
    config = FragmentsConfig(chunks_per_example=4, source="raw")
    fragments = build_fragments(calls, config, eval_fraction=0.0, seed=13, nlp=nlp)
    text = "\n".join(c.text for e in fragments.train for c in e.chunks)
    assert "Beesly" in text and "Street" in text
    assert examples_linking_values(fragments.train, raw_values) == 0


def test_the_train_stage_config_builds_fragment_examples(
    nlp: Language,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("components.train.fragments.load_chunker", lambda model: nlp)
    config = TrainConfig(corpus="fragmented", tasks=["continuation"], eval_fraction=0.0)
    split = corpus_examples(corpus(), config)
    assert split.train and all(len(set(e.sources)) == 8 for e in split.train)


@pytest.mark.parametrize(
    ("train", "key"),
    [
        ({"corpus": "fragmented", "tasks": ["summary"]}, "train.tasks"),
        ({"corpus": "fragmented", "tasks": ["continuation", "summary"]}, "train.tasks"),
        ({"fragments": {"max_chunk_words": 0}}, "train.fragments.max_chunk_words"),
        ({"fragments": {"chunks_per_example": 1}}, "train.fragments.chunks_per_example"),
        ({"fragments": {"min_chunk_words": 7}}, "train.fragments.min_chunk_words"),
        ({"fragments": {"source": "masked"}}, "train.fragments.source"),
        ({"fragments": {"chunk_size": 3}}, "train.fragments.chunk_size"),
        ({"mask_loss_weight": 0.5}, "train.mask_loss_weight"),
    ],
)
def test_bad_params_name_their_key(train: dict[str, object], key: str) -> None:
    with pytest.raises(ParamsError, match=key.replace(".", r"\.")):
        stage_config({"train": train}, "train", cls=TrainConfig)


def test_good_params_are_accepted() -> None:
    params = {
        "corpus": "fragmented",
        "tasks": ["continuation"],
        "mask_loss_weight": 0,
        "fragments": {"source": "raw", "max_chunk_words": 4},
    }
    config = stage_config({"train": params}, "train", cls=TrainConfig)
    assert config.fragments == FragmentsConfig(source="raw", max_chunk_words=4)
    assert config.mask_loss_weight == 0
