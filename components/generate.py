"""A deterministic corpus of business calls, written the way a speech-to-text engine writes them.

Conversations are drawn from the scripts in ``components.generate_templates``. Every mention
of personal information is its own text segment, and its character offsets are recorded while
the turn is concatenated, so the ``pi`` ground truth is exact by construction. How much of
the text looks like raw ASR output (lowercase stretches, spelled letters, digits said as
words, fillers) is set by ``ASR_NOISE_POLICY``.
"""

from __future__ import annotations

import calendar
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, TypeAlias

from faker import Faker

from components import generate_templates as tpl
from components.corpus import Conversation, PiSpan, Turn
from components.errors import ParamsError
from components.generate_templates import ASR_NOISE_POLICY, Segment, Slot

Noise: TypeAlias = Mapping[str, float]
_Lines: TypeAlias = list[tuple[str, tuple[Segment, ...]]]


@dataclass(frozen=True)
class _Item:
    """One real-world item a conversation mentions, and what its renderer needs."""

    entity_type: str
    key: str
    kind: str  # which renderer writes its mentions
    written: str = ""  # the normal written form
    parts: tuple[str, ...] = ()  # digit groups, (house number, street) or (year, month, day)
    seps: tuple[str, ...] = ("",)  # what a written number may put between its parts
    said_seps: tuple[str, ...] = (" ", ", ")  # ... and what goes between them when said
    prefix: str = ""  # letters written before a number (ORD-)


@dataclass(frozen=True)
class _Piece:
    """A stretch of turn text; personal information carries its type and entity key."""

    text: str
    entity_type: str = ""
    entity: str = ""


def generate_corpus(
    n_conversations: int, seed: int, *, noise: Mapping[str, float] | None = None
) -> list[Conversation]:
    """Generate ``n_conversations`` labelled call transcripts; the same seed gives the same corpus.

    Args:
        n_conversations: how many; a longer corpus of one seed starts with the shorter one.
        seed: seeds this call's own ``random.Random`` and Faker instance (no global state).
        noise: overrides for ``ASR_NOISE_POLICY``.

    Returns:
        Conversations ``conv-00001`` ... with exact ``pi`` spans and PI-free ``labels``.

    Raises:
        ParamsError: a noise key that the policy does not have, or a value outside 0..1.
    """
    policy = _noise_policy(noise or {})
    rng = random.Random(seed)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    # Contexts are drawn lazily, in step with the conversations, so prefixes are stable.
    numbered = zip(range(1, n_conversations + 1), _contexts(rng), strict=False)
    return [_conversation(number, context, rng, fake, policy) for number, context in numbered]


def _noise_policy(overrides: Mapping[str, float]) -> Noise:
    unknown = sorted(set(overrides) - set(ASR_NOISE_POLICY))
    if unknown:
        raise ParamsError(
            f"generate: unknown noise keys {unknown}; allowed: {list(ASR_NOISE_POLICY)}"
        )
    for key, value in overrides.items():
        if not 0.0 <= value <= 1.0:
            raise ParamsError(f"generate: noise '{key}' must be a probability in 0..1")
    return {**ASR_NOISE_POLICY, **overrides}


def _contexts(rng: random.Random) -> Iterator[str]:
    """Contexts in shuffled bags of CONTEXT_WEIGHTS: every context shows up early and often."""
    bag = [context for context, weight in tpl.CONTEXT_WEIGHTS.items() for _ in range(weight)]
    while True:
        rng.shuffle(bag)
        yield from bag


def _conversation(
    number: int, context: str, rng: random.Random, fake: Faker, noise: Noise
) -> Conversation:
    scenario = rng.choice([spec for spec in tpl.SCENARIOS if spec.context == context])
    ending = rng.choice(scenario.endings)
    closing = tpl.CLOSING_BLOCKS.get(context)
    scripts = [
        scenario.script,
        ending.script,
        *([(tpl.Line("", block=closing),)] if closing else []),
    ]
    lines = [line for script in scripts for line in _expand(script, rng, noise)]
    if context not in tpl.SEGMENTED_CONTEXTS:
        lines = _merge_same_speaker(lines)
    cast = _Cast(rng, fake, noise)
    full_labels = rng.random() < noise["speaker_full_name"]
    turns: list[Turn] = []
    spans: list[PiSpan] = []
    lowercase = _lowercase_turns(len(lines), rng, noise)
    for index, ((role, segments), lower) in enumerate(zip(lines, lowercase, strict=True)):
        turn, turn_spans = _turn(index, role, segments, cast, lower, full_labels)
        turns.append(turn)
        spans.extend(turn_spans)
    labels: dict[str, Any] = {
        "summary": f"{cast.fill_text(scenario.summary)} {cast.fill_text(ending.summary)}",
        "action_items": [cast.fill_text(item) for item in ending.action_items],
        "purpose": scenario.purpose,
        "outcome": ending.outcome,
    }
    return Conversation(f"conv-{number:05d}", tuple(turns), context, tuple(spans), labels)


def _expand(script: tpl.Script, rng: random.Random, noise: Noise) -> _Lines:
    """The lines said in one conversation: blocks drawn, optional lines kept or not."""
    lines: _Lines = []
    for line in script:
        if line.optional and rng.random() >= noise["optional_line"]:
            continue
        if line.block:
            lines.extend(_expand(rng.choice(tpl.BLOCKS[line.block]), rng, noise))
        else:
            lines.append((line.role, rng.choice(line.variants)))
    return lines


def _merge_same_speaker(lines: _Lines) -> _Lines:
    merged: _Lines = []
    for role, segments in lines:
        if merged and merged[-1][0] == role:
            merged[-1] = (role, (*merged[-1][1], " ", *segments))
        else:
            merged.append((role, segments))
    return merged


def _lowercase_turns(n: int, rng: random.Random, noise: Noise) -> list[bool]:
    """Which turns come out without truecasing: the whole call, or stretches of turns."""
    if rng.random() < noise["conversation_lowercase"]:
        return [True] * n
    flags: list[bool] = []
    lower = False
    for _ in range(n):
        lower = rng.random() < noise["lowercase_continue" if lower else "lowercase_start"]
        flags.append(lower)
    return flags


def _turn(
    index: int, role: str, segments: tuple[Segment, ...], cast: _Cast, lower: bool, full: bool
) -> tuple[Turn, list[PiSpan]]:
    """One turn's text and spans; offsets are counted while the pieces are joined."""
    pieces = _disfluent(
        [cast.piece(segment, lower) for segment in segments], cast.rng, cast.noise, lower
    )
    if lower and cast.rng.random() < cast.noise["strip_punctuation"]:
        pieces = [p if p.entity_type else _Piece(_END_PUNCTUATION.sub("", p.text)) for p in pieces]
    speaker, speaker_key = cast.speaker(role, full)
    spans = [PiSpan(index, 0, len(speaker), "PERSON_NAME", speaker_key, "speaker")]
    position = 0
    for piece in pieces:
        end = position + len(piece.text)
        if piece.entity_type:
            spans.append(PiSpan(index, position, end, piece.entity_type, piece.entity))
        position = end
    return Turn(speaker, "".join(piece.text for piece in pieces)), spans


_END_PUNCTUATION = re.compile(r"[.,?!;:](?=\s|$)")
_SHORT_WORD = re.compile(r"(?<![\w'])[A-Za-z']{1,5}(?= )")
_WORD_END = re.compile(r"[A-Za-z](?= )")
_KEEPS_CAPITAL = re.compile(r"I\b|[A-Z]{2}")


def _disfluent(pieces: list[_Piece], rng: random.Random, noise: Noise, lower: bool) -> list[_Piece]:
    """Add a repeated word, a filler inside the turn and a filler at its start, each by chance."""
    if rng.random() < noise["repeat_word"]:
        _edit_literal(pieces, rng, _repeat_word)
    if rng.random() < noise["filler_mid_turn"]:
        _edit_literal(pieces, rng, _insert_filler)
    if rng.random() < noise["filler_turn_start"]:
        first = pieces[0]
        if not first.entity_type and not _KEEPS_CAPITAL.match(first.text):
            pieces[0] = _Piece(first.text[:1].lower() + first.text[1:])
        filler = rng.choice(tpl.START_FILLERS)
        pieces.insert(0, _Piece(filler.lower() if lower else filler))
    return pieces


def _edit_literal(
    pieces: list[_Piece], rng: random.Random, edit: Callable[[str, random.Random], str]
) -> None:
    candidates = [
        i for i, piece in enumerate(pieces) if not piece.entity_type and " " in piece.text
    ]
    if candidates:
        index = rng.choice(candidates)
        pieces[index] = _Piece(edit(pieces[index].text, rng))


def _repeat_word(text: str, rng: random.Random) -> str:
    words = list(_SHORT_WORD.finditer(text))
    if not words:
        return text
    word = rng.choice(words)
    return f"{text[: word.start()]}{word[0]} {text[word.start() :]}"


def _insert_filler(text: str, rng: random.Random) -> str:
    ends = [match.end() for match in _WORD_END.finditer(text)]
    if not ends:
        return text
    at = rng.choice(ends)
    return f"{text[:at]}{rng.choice(tpl.MID_FILLERS)}{text[at:]}"


class _Cast:
    """Everyone and everything one conversation mentions, made up at the first mention."""

    def __init__(self, rng: random.Random, fake: Faker, noise: Noise) -> None:
        self.rng, self.fake, self.noise = rng, fake, noise
        self._items: dict[str, _Item] = {}
        self._people: dict[str, tuple[str, str, str]] = {}  # role -> first, last, key
        self._orgs: dict[str, tuple[str, str, str]] = {}  # role -> name, domain, key
        self._fills: dict[str, str] = {}
        self._counts: Counter[str] = Counter()
        self._used: set[str] = set()  # no two items of one conversation share a surface

    def piece(self, segment: Segment, lower: bool) -> _Piece:
        """The text of one template segment, with its entity when it is personal information."""
        if isinstance(segment, Slot) and segment.name not in tpl.FILL_VALUES:
            item = self.item(segment.name)
            text = _RENDERERS[item.kind](item, segment.form, self.rng, self.noise)
            return _Piece(text.lower() if lower else text, item.entity_type, item.key)
        text = segment if isinstance(segment, str) else self.fill(segment.name)
        return _Piece(text.lower() if lower else text)

    def speaker(self, role: str, full: bool) -> tuple[str, str]:
        first, last, key = self.person(role)
        return (f"{first} {last}" if full else first), key

    def fill(self, name: str) -> str:
        if name not in self._fills:
            self._fills[name] = self.rng.choice(tpl.FILL_VALUES[name])
        return self._fills[name]

    def fill_text(self, text: str) -> str:
        """Label text with its (non-personal) slots filled as the dialogue filled them."""
        segments = tpl.parse_segments(text)
        return "".join(s if isinstance(s, str) else self.fill(s.name) for s in segments)

    def item(self, name: str) -> _Item:
        if name not in self._items:
            self._items[name] = self._new_item(name)
        return self._items[name]

    def _new_item(self, name: str) -> _Item:
        owner, _, attr = name.partition(".")
        kind = (attr or owner).rstrip("0123456789")
        if not attr and kind in tpl.ITEM_TYPES:
            owner = ""
        elif owner in tpl.ORG_ROLES and not attr:
            org_name, _, key = self.org(owner)
            return _Item("ORGANIZATION_NAME", key, "text", org_name)
        elif attr in ("", "first", "last"):
            first, last, key = self.person(owner)
            written = {"": f"{first} {last}", "first": first, "last": last}[attr]
            return _Item("PERSON_NAME", key, "name", written)
        entity_type = tpl.ITEM_TYPES[kind]
        made = _MAKERS.get(kind, _make_generic_id)(self, owner, kind)
        return replace(made, entity_type=entity_type, key=self._key(entity_type))

    def person(self, role: str) -> tuple[str, str, str]:
        if role not in self._people:
            first = self.fresh(self.fake.first_name)
            self._people[role] = (first, self.fresh(self.fake.last_name), self._key("PERSON_NAME"))
        return self._people[role]

    def org(self, role: str) -> tuple[str, str, str]:
        if role not in self._orgs:
            name = self.fresh(self._org_name, check=False)
            words = [word for word in re.findall(r"[a-z]+", name.lower()) if word != "and"]
            self._orgs[role] = (name, "".join(words[:2]) + ".com", self._key("ORGANIZATION_NAME"))
        return self._orgs[role]

    def _org_name(self) -> str:
        if self.rng.random() < tpl.VALUE_ODDS["faker_company"]:
            return self.fake.company()
        return f"{self.fake.last_name()} {self.rng.choice(tpl.ORG_SECTORS)}"

    def fresh(self, draw: Callable[[], str], check: bool = True) -> str:
        """A value not used yet in this conversation and, for names, no word of the templates."""
        for _ in range(_MAX_DRAWS):
            value = draw()
            if value not in self._used and (not check or _usable_name(value)):
                self._used.add(value)
                return value
        raise ValueError(f"generate: no unused value left after {_MAX_DRAWS} draws")

    def _key(self, entity_type: str) -> str:
        self._counts[entity_type] += 1
        return f"{tpl.ENTITY_PREFIX[entity_type]}:{self._counts[entity_type]}"


_MAX_DRAWS = 10_000  # a vocabulary this conversation has used up is a template bug


def _usable_name(value: str) -> bool:
    return (
        value.isascii()
        and value.isalpha()
        and len(value) >= 3
        and value.lower() not in tpl.TEMPLATE_WORDS
    )


# ------------------------------------------------------------------------- item makers


def _digits(rng: random.Random, n: int, lowest_first: int = 1) -> str:
    first = str(rng.randint(lowest_first, 9))
    return first + "".join(str(rng.randrange(10)) for _ in range(n - 1))


def _chunks(digits: str, size: int) -> tuple[str, ...]:
    """Groups of about ``size`` digits, as even as possible: 10 digits -> 4, 3, 3."""
    count = -(-len(digits) // size)
    bounds = [len(digits) * i // count for i in range(count + 1)]
    return tuple(digits[start:end] for start, end in pairwise(bounds))


def _from_name(cast: _Cast, owner: str, formats: tuple[str, ...]) -> str:
    """An email local part or user name made from the owner's name (mkowalski, mark.k07)."""
    first, last, _ = cast.person(owner)
    nn = f"{cast.rng.randint(1, 99):02d}"
    fields = {"first": first, "last": last, "f": first[0], "l": last[0], "nn": nn}
    return cast.rng.choice(formats).format(**fields).lower()


def _make_email(cast: _Cast, owner: str, kind: str) -> _Item:
    if owner in tpl.ORG_ROLES:
        local, domain = cast.rng.choice(tpl.ORG_MAILBOXES), cast.org(owner)[1]
    else:
        local, employer = _from_name(cast, owner, tpl.EMAIL_FORMATS), tpl.EMPLOYER.get(owner)
        domain = cast.org(employer)[1] if employer else cast.fake.free_email_domain()
    return _Item("", "", "said", f"{local}@{domain}")


def _make_user(cast: _Cast, owner: str, kind: str) -> _Item:
    return _Item("", "", "said", _from_name(cast, owner, tpl.USER_FORMATS))


def _make_url(cast: _Cast, owner: str, kind: str) -> _Item:
    formats = tpl.URL_FORMATS if owner else tpl.INTERNAL_URL_FORMATS  # no owner: a team page
    host, path = cast.rng.choice(tpl.INTERNAL_HOSTS), cast.rng.choice(tpl.URL_PATHS)
    domain = cast.org(owner or "org")[1]
    return _Item(
        "", "", "said", cast.rng.choice(formats).format(domain=domain, host=host, path=path)
    )


def _make_phone(cast: _Cast, owner: str, kind: str) -> _Item:
    groups = (_digits(cast.rng, 3, 2), _digits(cast.rng, 3, 2), _digits(cast.rng, 4))
    return _Item("", "", "digits", parts=groups, seps=tpl.PHONE_SEPARATORS)


def _make_card(cast: _Cast, owner: str, kind: str) -> _Item:
    number = cast.fake.credit_card_number(card_type=cast.rng.choice(tpl.CARD_TYPES))
    return _Item("", "", "digits", parts=_chunks(number, 4), seps=tpl.CARD_SEPARATORS)


def _make_ssn(cast: _Cast, owner: str, kind: str) -> _Item:
    groups = tuple(cast.fake.ssn().split("-"))
    return _Item("", "", "digits", parts=groups, seps=tpl.SSN_SEPARATORS)


def _make_ip(cast: _Cast, owner: str, kind: str) -> _Item:
    rng = cast.rng
    private = f"192.168.{rng.randint(0, 20)}.{rng.randint(2, 254)}"
    address = private if rng.random() < tpl.VALUE_ODDS["private_ip"] else cast.fake.ipv4_public()
    return _Item(
        "", "", "digits", parts=tuple(address.split(".")), seps=(".",), said_seps=(" dot ",)
    )


def _make_generic_id(cast: _Cast, owner: str, kind: str) -> _Item:
    prefixes, (low, high) = tpl.ID_FORMATS[kind]
    prefix, digits = cast.rng.choice(prefixes), _digits(cast.rng, cast.rng.randint(low, high))
    if prefix or len(digits) < 8:
        return _Item("", "", "digits", parts=(digits,), prefix=prefix)
    return _Item("", "", "digits", parts=_chunks(digits, 4), seps=tpl.ACCOUNT_SEPARATORS)


def _make_address(cast: _Cast, owner: str, kind: str) -> _Item:
    rng = cast.rng
    number = str(rng.randint(*tpl.HOUSE_NUMBERS))
    street = f"{rng.choice(tpl.STREET_NAMES)} {rng.choice(tpl.STREET_SUFFIXES)}"
    if rng.random() < tpl.VALUE_ODDS["unit_number"]:
        street += " " + rng.choice(tpl.UNIT_FORMATS).format(n=rng.randint(1, 40))
    return _Item("", "", "address", f"{number} {street}", (number, street))


def _make_city(cast: _Cast, owner: str, kind: str) -> _Item:
    return _Item("", "", "text", cast.fresh(lambda: cast.rng.choice(tpl.CITIES), check=False))


def _make_dob(cast: _Cast, owner: str, kind: str) -> _Item:
    year, month = cast.rng.randint(*tpl.BIRTH_YEARS), cast.rng.randint(1, 12)
    day = cast.rng.randint(1, calendar.monthrange(year, month)[1])
    return _Item("", "", "date", parts=(str(year), str(month), str(day)))


_MAKERS: dict[str, Callable[[_Cast, str, str], _Item]] = {
    "email": _make_email,
    "user": _make_user,
    "url": _make_url,
    "phone": _make_phone,
    "card": _make_card,
    "ssn": _make_ssn,
    "ip": _make_ip,
    "addr": _make_address,
    "city": _make_city,
    "dob": _make_dob,
}

# ------------------------------------------------------------- how ASR writes a mention

# Policy keys for spelling out / saying aloud an email address, user name or URL.
_SAID_NOISE = {
    "EMAIL_ADDRESS": ("email_spelled", "email_spoken"),
    "USER_NAME": ("username_spelled", ""),
    "URL": ("", "url_spoken"),
}


def _chance(form: str, wanted: str, rng: random.Random, probability: float) -> bool:
    """Whether a mention takes form ``wanted``: the template asks for it, or by chance."""
    return form == wanted or (not form and rng.random() < probability)


def _speller(rng: random.Random, noise: Noise) -> Callable[[str], str]:
    """How one mention spells its words: M-A-R-K, m-a-r-k or M A R K, the same for each word."""
    joiner = " " if rng.random() < noise["spell_spaced"] else "-"
    lower = rng.random() < noise["spell_lowercase"]

    def spell(word: str) -> str:
        letters = joiner.join(char for char in word if char.isalnum())
        return letters.lower() if lower else letters.upper()

    return spell


def _say(text: str, rng: random.Random, noise: Noise, spell: bool) -> str:
    """Text read out: words kept or spelled (never after an @), digits as words, symbols named."""
    words, spell_word = [], _speller(rng, noise)
    for token in re.findall(r"[a-z]+|\d+|[^a-z\d]", text.lower()):
        spell = spell and token != "@"
        if token.isdigit():
            words.append(_digit_words(token, rng, noise))
        elif token.isalpha():
            words.append(spell_word(token) if spell else token)
        else:
            words.append(tpl.SPOKEN_SYMBOLS.get(token, token))
    return " ".join(words)


def _digit_words(digits: str, rng: random.Random, noise: Noise) -> str:
    words: list[str] = []
    i = 0
    while i < len(digits):
        word = tpl.SMALL_NUMBERS[int(digits[i])]
        if digits[i] == "0" and rng.random() < noise["digit_zero_as_oh"]:
            word = "oh"
        elif digits[i] in tpl.MISHEARD_DIGITS and rng.random() < noise["digit_misheard"]:
            word = tpl.MISHEARD_DIGITS[digits[i]]
        double = digits[i + 1 : i + 2] == digits[i] and rng.random() < noise["digit_double"]
        words.append(f"double {word}" if double else word)
        i += 2 if double else 1
    return " ".join(words)


def _render_name(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    if _chance(form, "spell", rng, noise["name_spelled"]):
        return " ".join(map(_speller(rng, noise), item.written.split()))
    return _render_text(item, form, rng, noise)


def _render_text(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    lower = _chance(form, "spoken", rng, noise["name_lowercase"])
    return item.written.lower() if lower else item.written


def _render_address(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    number, street = item.parts
    if _chance(form, "spoken", rng, noise["digits_spoken"]):
        return f"{_digit_words(number, rng, noise)} {street.lower()}"
    return _render_text(item, form, rng, noise)


def _render_said(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    spell_key, speak_key = _SAID_NOISE[item.entity_type]
    if spell_key and _chance(form, "spell", rng, noise[spell_key]):
        return _say(item.written, rng, noise, spell=True)
    if speak_key and _chance(form, "spoken", rng, noise[speak_key]):
        return _say(re.sub(r"^https?://", "", item.written), rng, noise, spell=False)
    return item.written


def _render_digits(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    if not _chance(form, "spoken", rng, noise["digits_spoken"]):
        return item.prefix + rng.choice(item.seps).join(item.parts)
    groups = [_digit_words(group, rng, noise) for group in item.parts]
    letters = [char for char in item.prefix if char.isalpha()]
    return " ".join([*letters, rng.choice(item.said_seps).join(groups)])


def _render_date(item: _Item, form: str, rng: random.Random, noise: Noise) -> str:
    year, month, day = (int(part) for part in item.parts)
    name = tpl.MONTHS[month - 1]
    if _chance(form, "spoken", rng, noise["date_spoken"]):
        words = {"month_word": name.lower(), "ordinal": tpl.number_words(day, ordinal=True)}
        return rng.choice(tpl.SPOKEN_DATE_FORMATS).format(**words, year_words=tpl.year_words(year))
    return rng.choice(tpl.WRITTEN_DATE_FORMATS).format(month=name, mm=month, day=day, year=year)


_RENDERERS: dict[str, Callable[[_Item, str, random.Random, Noise], str]] = {
    "name": _render_name,
    "text": _render_text,
    "address": _render_address,
    "said": _render_said,
    "digits": _render_digits,
    "date": _render_date,
}
