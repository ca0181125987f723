"""anonymize.detectors: word-level detectors (LM probability, allow list, vocabulary
threshold) composed with the entity backend."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from components.anonymize.compose import UnionDetector
from components.anonymize.config import (
    WORD_LEVEL_DETECTORS,
    AnonymizeConfig,
    LmProbabilityConfig,
)
from components.anonymize.engine import (
    CONTEXT_CHARS,
    Detector,
    anonymize_corpus,
    detect_batch,
    left_contexts,
)
from components.anonymize.factory import (
    DEFAULT_SPEAKER_ROLES,
    WORD_LEVEL_BUILDERS,
    build_detector,
)
from components.anonymize.fields import TextField
from components.anonymize.lm_probability import (
    CausalWordScorer,
    LmProbabilityDetector,
    MaskedWordScorer,
    WordProbability,
    spans_below,
)
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span
from components.anonymize.vocabulary import (
    VocabularyDetector,
    allow_list_detector,
    vocab_threshold_detector,
    vocabulary,
)
from components.core.config import stage_config
from components.core.corpus import Conversation, Turn
from components.core.errors import InputError, ParamsError
from components.core.lexicon import stop_words
from components.ingest.generate.conversations import generate_corpus

POLICY = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES)
SAFE_WORDS = ["hi", "this", "is", "my", "email", "call", "me", "at", "the", "office", "manager"]


@pytest.fixture
def allow_list(tmp_path: Path) -> Path:
    path = tmp_path / "allow.txt"
    path.write_text("# safe words\n" + "\n".join(w.upper() for w in SAFE_WORDS) + "\n")
    return path


def surfaces(text: str, spans: Sequence[Span]) -> list[str]:
    return [text[s.start : s.end] for s in spans]


# --- composition -------------------------------------------------------------------------


def test_entity_span_wins_and_adjacent_words_become_one_placeholder(
    detector: object, allow_list: Path
) -> None:
    union = UnionDetector([detector], [allow_list_detector(allow_list)])
    text = "Hi, this is Mark Kowalski again. My email is mark.k@example.com"
    conversation = Conversation("c1", (Turn("Agent", text),))
    ((anonymized, replacements),) = list(anonymize_corpus([conversation], union, policy=POLICY))
    # the unlisted run "Mark Kowalski again" is longer than the name in it, yet the name keeps
    # its type and number; the rest of the run is a word span; the email's words are the email
    assert anonymized.turns[0].text == (
        "Hi, this is [PERSON_NAME_1] [UNLISTED_WORD_1]. My email is [EMAIL_ADDRESS_1]"
    )
    sources = {r.span.entity_type: r.span.source for r in replacements}
    assert sources["UNLISTED_WORD"] == "allow_list"
    assert sources["PERSON_NAME"] != "allow_list"


def test_word_detectors_alone_through_detect_batch(allow_list: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(
        detectors=["allow_list", "vocab_threshold"], allow_list=str(allow_list)
    )
    union = build_detector(config, tmp_path)
    assert isinstance(union, UnionDetector) and not union.detectors
    assert [type(d) for d in union.word_level] == [VocabularyDetector, VocabularyDetector]
    text = "Call me at the office, Zorblax Quuxley"
    conversation = Conversation("c1", (Turn(None, text),), plain=True)
    ((_, spans),) = detect_batch([conversation], union, policy=POLICY)
    assert surfaces(text, spans[0]) == ["Zorblax Quuxley"]
    ((anonymized, _),) = list(anonymize_corpus([conversation], union, policy=POLICY))
    assert anonymized.turns[0].text == "Call me at the office, [UNLISTED_WORD_1]"
    assert set(WORD_LEVEL_BUILDERS) == set(WORD_LEVEL_DETECTORS)


# --- allow_list and vocab_threshold ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Call ME at the OFFICE", []),  # case-insensitive
        ("call Zorblax at the office", ["Zorblax"]),
        ("call John Smith at the office", ["John Smith"]),  # one span for the run
        ("call John, Smith", ["John", "Smith"]),  # a comma keeps them apart
        ("call me at 5551234, the 2nd office", ["5551234", "2nd"]),  # numbers are in no list
        ("the manager's office", []),  # a possessive is its stem
        ("call [PERSON_NAME_1] at the office", []),  # placeholders are not words
        ("call O'Neil", ["O'Neil"]),
    ],
)
def test_allow_list_masks_unlisted_words(text: str, masked: list[str], *, allow_list: Path) -> None:
    (spans,) = allow_list_detector(allow_list).detect([text])
    assert surfaces(text, spans) == masked
    assert all(s.entity_type == "UNLISTED_WORD" and s.source == "allow_list" for s in spans)


def test_vocab_threshold_keeps_frequent_words_and_a_smaller_n_masks_more() -> None:
    text = "The letter was sent to Zorblax on Tuesday, order 4471."
    small, large = vocab_threshold_detector(100), vocab_threshold_detector(20_000)
    (few,) = large.detect([text])
    (many,) = small.detect([text])
    assert surfaces(text, few) == ["Zorblax", "4471"]
    assert set(surfaces(text, few)) < {w for s in surfaces(text, many) for w in s.split()}
    assert {s.source for s in many} == {"vocab_threshold"}
    assert "THE" not in surfaces("THE End", small.detect(["THE End"])[0])


def test_vocabulary_leaves_words_with_digits_out() -> None:
    assert vocabulary(["Call", "4471", "2nd"], "allow_list").words == frozenset({"call"})


# --- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda: AnonymizeConfig(detectors=["spellcheck"]), "anonymize.detectors"),  # type: ignore[list-item]
        (lambda: AnonymizeConfig(detectors=[]), "anonymize.detectors"),
        (lambda: AnonymizeConfig(detectors=["allow_list", "allow_list"]), "anonymize.detectors"),
        (lambda: AnonymizeConfig(vocab_threshold=0), "anonymize.vocab_threshold"),
        (lambda: LmProbabilityConfig(p=0.0), "anonymize.lm_probability.p"),
        (lambda: LmProbabilityConfig(p=1.0), "anonymize.lm_probability.p"),
        (lambda: LmProbabilityConfig(batch_size=0), "anonymize.lm_probability.batch_size"),
        (lambda: LmProbabilityConfig(max_tokens=0), "anonymize.lm_probability.max_tokens"),
        (
            lambda: LmProbabilityConfig(context_tokens=-1),
            "anonymize.lm_probability.context_tokens",
        ),
        (
            lambda: stage_config(
                {"anonymize": {"lm_probability": {"q": 0.1}}}, "anonymize", cls=AnonymizeConfig
            ),
            "anonymize.lm_probability.q",
        ),
    ],
)
def test_bad_params_name_their_key(make, key: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParamsError, match=key.replace(".", r"\.")):
        make()


def test_a_missing_allow_list_is_an_error_only_when_it_is_used(tmp_path: Path) -> None:
    config = AnonymizeConfig(detectors=["allow_list"], allow_list="policy/absent.txt")
    with pytest.raises(InputError, match=r"policy/absent\.txt.*anonymize\.allow_list"):
        build_detector(config, tmp_path)
    unused = AnonymizeConfig(detectors=["vocab_threshold"], allow_list="policy/absent.txt")
    assert isinstance(build_detector(unused, tmp_path), VocabularyDetector)


def test_the_shipped_allow_list_reads_and_keeps_no_first_name() -> None:
    shipped = AnonymizeConfig(detectors=["allow_list"])
    words = allow_list_detector(Path(__file__).parents[2] / shipped.allow_list).words
    assert {"will", "may", "good", "monday"} <= words
    assert not {"mark", "june", "smith", "texas", "1st"} & words


# --- lm_probability: causal --------------------------------------------------------------


def causal_detector(model_dir: Path, base: Path) -> LmProbabilityDetector:
    """The default lm_probability detector on ``model_dir`` (as models/base under ``base``);
    a 64-token window so that a short text already needs several."""
    (base / "models").mkdir()
    (base / "models" / "base").symlink_to(model_dir)
    settings = LmProbabilityConfig(max_tokens=64)
    built = build_detector(
        AnonymizeConfig(detectors=["lm_probability"], lm_probability=settings), base
    )
    assert isinstance(built, LmProbabilityDetector)
    assert isinstance(built.scorer, CausalWordScorer)
    return built


@pytest.fixture(scope="module")
def causal(base_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> LmProbabilityDetector:
    """On the tiny model: the detector's mechanics (offsets, windows, batching)."""
    return causal_detector(base_model_dir, tmp_path_factory.mktemp("lm_base"))


@pytest.fixture(scope="module")
def causal_smollm2(
    smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> LmProbabilityDetector:
    """On the real SmolLM2: what a context does to a word's probability is a pretrained
    model's claim."""
    return causal_detector(smollm2_dir, tmp_path_factory.mktemp("lm_smollm2"))


def test_causal_word_probability_is_the_product_of_its_sub_tokens(
    causal: LmProbabilityDetector,
) -> None:
    text = "Yesterday I spoke with Zorblaxington about the invoice."
    scorer = causal.scorer
    assert isinstance(scorer, CausalWordScorer)
    (scored,) = scorer.score([text], 8)
    start = text.index("Zorblaxington")
    (word,) = [w for w in scored if w.start == start]
    assert word.end == start + len("Zorblaxington")
    # independently: one forward pass on the start token and the whole text
    tokenizer, model = scorer.lm.tokenizer, scorer.lm.model
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    pieces = [
        i
        for i, (a, b) in enumerate(encoded["offset_mapping"])
        if start < b and a < word.end and text[a:b].strip()
    ]
    assert len(pieces) >= 2
    ids = torch.tensor([[scorer.start_id, *encoded["input_ids"]]])
    with torch.inference_mode():
        log_probs = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    # logits at position i (0: the start token) predict text token i
    expected = sum(float(log_probs[i, encoded["input_ids"][i]]) for i in pieces)
    assert word.probability == pytest.approx(math.exp(expected), rel=1e-3)


def test_threshold_is_monotonic_and_never_takes_stop_words_or_placeholders(
    causal: LmProbabilityDetector,
) -> None:
    text = "Then [PERSON_NAME_1] told me that Qwzxy Brandlethorpe had moved to the flat above."
    scored = causal.scorer.score([text], 8)
    redacted = [
        {w for s in spans_below(scored, p, texts=[text])[0] for w in range(s.start, s.end)}
        for p in (1e-8, 1e-4, 1e-2, 0.999)
    ]
    assert all(low <= high for low, high in itertools.pairwise(redacted))
    assert len(redacted[0]) < len(redacted[-1])
    placeholder = range(text.index("["), text.index("]") + 1)
    assert not redacted[-1] & set(placeholder)
    stops = {w.lower() for w in text.replace(".", "").split()} & stop_words()
    assert stops, "the text must hold stop words"
    assert not {
        text[s.start : s.end].lower() for s in spans_below(scored, 0.999, texts=[text])[0]
    } & (stops)
    assert "Qwzxy Brandlethorpe" in surfaces(text, spans_below(scored, 1e-3, texts=[text])[0])


def test_long_texts_are_read_in_windows_and_batching_changes_nothing(
    causal: LmProbabilityDetector,
) -> None:
    short = "Kindly forward the Vrelgast report."
    long = " ".join(["The quarterly review covered revenue, hiring and the office lease."] * 8)
    scorer = causal.scorer
    assert isinstance(scorer, CausalWordScorer)
    assert len(scorer.lm.encode([long])[0][0]) > scorer.lm.max_tokens  # more than one window
    together = scorer.score([short, long], 2)
    alone = [scorer.score([short], 1)[0], scorer.score([long], 1)[0]]
    for joint, single in zip(together, alone, strict=True):
        assert [(w.start, w.end) for w in joint] == [(w.start, w.end) for w in single]
        for a, b in zip(joint, single, strict=True):
            assert a.probability == pytest.approx(b.probability, rel=1e-3, abs=1e-9)
    # every word after the first window is scored too
    assert together[1][-1].end == long.rindex("lease") + len("lease")
    spans = causal.detect([short])
    assert surfaces(short, spans[0]) and causal.usage_metrics()["lm_probability_chars"] > 0


# --- lm_probability: masked --------------------------------------------------------------

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "saw", "today", "."]
VOCAB += ["zor", "##bl", "##ax", "##x", "q", "##u"]


@pytest.fixture
def tiny_bert(tmp_path: Path) -> Path:
    # transformers 5: BertTokenizer is the fast (tokenizers) one, with offsets
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    folder = tmp_path / "tiny_bert"
    folder.mkdir()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    BertTokenizer.from_pretrained(str(tmp_path)).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def test_masked_word_probability_masks_every_sub_token_at_once(tiny_bert: Path) -> None:
    settings = LmProbabilityConfig(model=str(tiny_bert), p=0.5)
    built = build_detector(AnonymizeConfig(detectors=["lm_probability"], lm_probability=settings))
    assert isinstance(built, LmProbabilityDetector)
    scorer = built.scorer
    assert isinstance(scorer, MaskedWordScorer)
    text = "the cat saw zorblax today."
    (scored,) = scorer.score([text], 4)
    by_word = {text[w.start : w.end]: w for w in scored}
    assert set(by_word) == {"cat", "saw", "zorblax", "today"}  # "the": a stop word
    tokens = scorer.lm.tokenizer(text)["input_ids"]  # [CLS] ... [SEP]
    pieces = [VOCAB.index(t) for t in ("zor", "##bl", "##ax")]
    first = tokens.index(pieces[0])
    assert tokens[first : first + 3] == pieces
    masked = list(tokens)
    masked[first : first + 3] = [VOCAB.index("[MASK]")] * 3
    with torch.inference_mode():
        logits = scorer.lm.model(input_ids=torch.tensor([masked])).logits[0]
    log_probs = torch.log_softmax(logits, dim=-1)
    expected = sum(float(log_probs[first + k, piece]) for k, piece in enumerate(pieces))
    assert by_word["zorblax"].probability == pytest.approx(math.exp(expected), rel=1e-4)


def test_spans_below_joins_a_run_and_keeps_its_order() -> None:
    text = "met Ann Bo, then Cy"
    scored = [
        [
            WordProbability(0, 3, 0.5),
            WordProbability(4, 7, 1e-5),
            WordProbability(8, 10, 1e-6),
            WordProbability(17, 19, 1e-6),
        ]
    ]
    assert surfaces(text, spans_below(scored, 1e-3, texts=[text])[0]) == ["Ann Bo", "Cy"]
    assert spans_below(scored, 1e-7, texts=[text]) == [[]]


# --- lm_probability in context: a turn after the call so far ------------------------------

CALL = Conversation(
    "ctx",
    (
        Turn("Agent", "Thank you for calling Brightwave Energy, this is Dana."),
        Turn("Customer", "Hi Dana, I need to update the address on my account."),
        Turn("Agent", "Certainly, could you confirm the account number?"),
    ),
    labels={"summary": "Dana updated the address."},
)
# The transcript before the last turn's text, as a transcript renders it.
LAST_TURN_CONTEXT = (
    "Agent: Thank you for calling Brightwave Energy, this is Dana.\n"
    "Customer: Hi Dana, I need to update the address on my account.\n"
    "Agent: "
)


class RecordingDetector:
    """Finds nothing; records what it was given (a member that reads no context)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str] | None]] = []

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        self.calls.append((list(texts), None))
        return [[] for _ in texts]


class RecordingContextualDetector(RecordingDetector):
    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = 64
    ) -> list[list[Span]]:
        self.calls.append((list(texts), list(contexts)))
        return [[] for _ in texts]


class ContextSpy(LmProbabilityDetector):
    """The real LM detector, recording the contexts the engine passes it."""

    contexts: list[list[str]]

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = 64
    ) -> list[list[Span]]:
        self.contexts = [*getattr(self, "contexts", []), list(contexts)]
        return super().detect_in_context(texts, contexts, batch_size=batch_size)


def last_turn_spans(conversation: Conversation, detector: Detector) -> list[Span]:
    ((fields, spans),) = detect_batch([conversation], detector, policy=POLICY)
    last = TextField("text", len(conversation.turns) - 1)
    return next(found for (where, _), found in zip(fields, spans, strict=True) if where == last)


def first_word_probabilities(scorer: CausalWordScorer) -> tuple[float, float]:
    """The last turn's first word's probability read alone and after LAST_TURN_CONTEXT."""
    text = CALL.turns[-1].text
    (alone,) = scorer.score([text], 8)
    (in_context,) = scorer.score([text], 8, contexts=[LAST_TURN_CONTEXT])
    assert (alone[0].start, alone[0].end) == (in_context[0].start, in_context[0].end) == (0, 9)
    return alone[0].probability, in_context[0].probability


def test_the_engine_scores_a_turn_after_the_transcript_before_it(
    causal_smollm2: LmProbabilityDetector,
) -> None:
    scorer = causal_smollm2.scorer
    assert isinstance(scorer, CausalWordScorer)
    alone, in_context = first_word_probabilities(scorer)
    assert in_context > 10 * alone  # "Certainly" is likely as an answer, not as an opening
    # through detect_batch, "Certainly" is redacted just above the probability that
    # LAST_TURN_CONTEXT gives it and kept just below: the engine passed that context
    text = CALL.turns[-1].text
    for p, redacted in ((in_context * 1.01, True), (in_context / 1.01, False)):
        spans = last_turn_spans(CALL, LmProbabilityDetector(scorer, p))
        assert ("Certainly" in surfaces(text, spans)) is redacted


def test_left_contexts_render_the_transcript_and_keep_its_end() -> None:
    assert left_contexts(CALL) == [
        "Agent: ",
        "Agent: Thank you for calling Brightwave Energy, this is Dana.\nCustomer: ",
        LAST_TURN_CONTEXT,
    ]
    plain = Conversation("p", (Turn(None, "first"), Turn(None, "second")), plain=True)
    assert left_contexts(plain) == ["", "first\n"]
    assert left_contexts(CALL, max_chars=9) == ["Agent: ", "ustomer: ", ".\nAgent: "]


def test_context_words_are_never_judged_and_offsets_are_the_texts(
    causal: LmProbabilityDetector,
) -> None:
    scorer = causal.scorer
    texts = ["Qwzxy sent the Plumbrick invoice", "ington approved it", "Thanks Vrelgast"]
    # improbable words in every context; the second ends inside the text's first word
    contexts = ["Zorblax Quuxley Brandlethorpe: ", "Zorblax Quuxley Brandlethorpe", ""]
    alone = scorer.score(texts, 8)
    in_context = scorer.score(texts, 8, contexts=contexts)
    for a, b in zip(alone, in_context, strict=True):
        assert [(w.start, w.end) for w in a] == [(w.start, w.end) for w in b]
    everything = LmProbabilityDetector(scorer, 0.999).detect_in_context(texts, contexts)
    for text, spans in zip(texts, everything, strict=True):
        assert spans and all(0 <= s.start < s.end <= len(text) for s in spans)
        assert " ".join(surfaces(text, spans)).split() == [
            w for w in text.split() if w.lower() not in stop_words()
        ]


def test_a_long_call_is_read_with_a_capped_context(causal: LmProbabilityDetector) -> None:
    review = " ".join(["The quarterly review covered revenue, hiring and the office lease."] * 30)
    turns = (
        Turn("Agent", review),
        Turn("Customer", review),
        Turn("Agent", "Send the Vrelgast file."),
    )
    call = Conversation("long", turns, labels={"summary": "A review."})
    before_last = f"Agent: {review}\nCustomer: {review}\nAgent: "
    assert len(before_last) > CONTEXT_CHARS
    spy = ContextSpy(causal.scorer, p=0.001)  # a 64-token window
    spans = last_turn_spans(call, spy)  # context tokens above half a window are cut: no error
    assert "Vrelgast" in " ".join(surfaces(turns[-1].text, spans))
    (contexts,) = spy.contexts
    assert max(map(len, contexts)) == CONTEXT_CHARS
    # the turns' texts, then the conversation's context and the summary: no context
    assert contexts[2] == before_last[-CONTEXT_CHARS:] and contexts[3:] == ["", ""]


def test_union_passes_contexts_only_to_members_that_read_them(
    causal_smollm2: LmProbabilityDetector,
) -> None:
    scorer = causal_smollm2.scorer
    assert isinstance(scorer, CausalWordScorer)
    alone, in_context = first_word_probabilities(scorer)
    lm = LmProbabilityDetector(scorer, math.sqrt(alone * in_context))  # in between
    text = CALL.turns[-1].text
    assert "Certainly" in surfaces(text, lm.detect([text])[0])
    entities, words = RecordingDetector(), RecordingContextualDetector()
    spans = last_turn_spans(CALL, UnionDetector([entities], [words, lm]))
    assert "Certainly" not in surfaces(text, spans)  # the LM read the context
    texts = [t.text for t in CALL.turns] + [CALL.context, "Dana updated the address."]
    assert entities.calls == [(texts, None)]
    assert words.calls == [(texts, [*left_contexts(CALL), "", ""])]


def test_context_redacts_fewer_words_of_generated_calls(
    causal_smollm2: LmProbabilityDetector,
) -> None:
    scorer = causal_smollm2.scorer  # a 64-token window: 32 tokens of context at most
    corpus = generate_corpus(3, 13)
    texts = [turn.text for conversation in corpus for turn in conversation.turns]
    contexts = [context for conversation in corpus for context in left_contexts(conversation)]
    alone = scorer.score(texts, 8)
    in_context = scorer.score(texts, 8, contexts=contexts)
    assert [len(words) for words in alone] == [len(words) for words in in_context]

    def redacted(scored: list[list[WordProbability]]) -> int:
        return sum(w.probability < 0.001 for words in scored for w in words)

    # measured: 55 words in context, 93 alone, of 169 (48 with the default 512-token window)
    assert redacted(in_context) < 0.8 * redacted(alone)


def test_context_tokens_zero_reads_each_turn_alone(causal: LmProbabilityDetector) -> None:
    scorer = causal.scorer
    assert isinstance(scorer, CausalWordScorer)
    text = CALL.turns[-1].text
    alone, _ = first_word_probabilities(scorer)
    kept, scorer.context_tokens = scorer.context_tokens, 0
    try:
        (read,) = scorer.score([text], 8, contexts=[LAST_TURN_CONTEXT])
    finally:
        scorer.context_tokens = kept
    assert read[0].probability == pytest.approx(alone, rel=1e-3)
