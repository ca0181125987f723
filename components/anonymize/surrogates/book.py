"""One conversation's surrogates: every mention of one entity, in every field, gets the
same surrogate (and its matching parts), and nothing links two conversations.

Names are kept word by word: each original name word maps to one surrogate word for the
whole conversation, so ``John``, ``John Smith``, ``Mr. Smith``, ``J-O-H-N`` and
``john.smith@acme.com`` become ``Mary``, ``Mary Jones``, ``Mr. Jones``, ``M-A-R-Y`` and
``mary.jones@…``. Other types keep one whole surrogate per entity (the entity is the
placeholder the mention would have had). A candidate that equals, contains or shares a
word with any value the conversation holds (an address's street and unit words apart), or
whose salted hash the PI inventory holds, whole, word by word or any run of its words, is
drawn again.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from components.anonymize.surrogates import shapes
from components.anonymize.surrogates.address import address_like, kept_words
from components.anonymize.surrogates.realistic import RealisticValues
from components.core.placeholders import entity_tokens

_TITLE = re.compile(r"^((?:mr|mrs|ms|miss|mx|dr|prof|sir|madam)\.?\s+)", re.I)
_POSSESSIVE = re.compile(r"(['’]s?)$")
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_PIECES = re.compile(r"[^\W\d_]+|\d+|[\W_]+")
# Words of an e-mail address, handle or URL that are structure, not anybody's: kept.
KEPT_ADDRESS_WORDS = frozenset(
    {
        "at",
        "dot",
        "underscore",
        "dash",
        "hyphen",
        "slash",
        "http",
        "https",
        "www",
        "com",
        "org",
        "net",
        "edu",
        "gov",
        "io",
        "co",
        "uk",
        "us",
        "ca",
        "info",
        "biz",
        "me",
        "gmail",
        "yahoo",
        "hotmail",
        "outlook",
        "icloud",
        "aol",
        "protonmail",
        "mail",
    }
)
ADDRESS_TYPES = frozenset({"EMAIL_ADDRESS", "USER_NAME", "URL", "DOMAIN_NAME"})
MAX_DRAWS = 25
PLACE_KEY = "place:"  # a place's key in ``SurrogateBook.methods``
MAX_RUN_WORDS = 6  # the longest run of a candidate's words looked up in the PI inventory
# A mention's context: the text of its field before it and after it.
Context = tuple[str, str]
# A drawn value and the method that chose it ("lm" may fall back to "realistic").
Drawn = tuple[str, str]


class SurrogateSource(Protocol):
    """Where a new surrogate comes from: ``realistic`` draws from the locale's lists;
    ``lm`` and ``embedding`` choose among candidates in the mention's context."""

    def first_name(
        self, rng: random.Random, gender: str | None, *, original: str, context: Context
    ) -> Drawn: ...

    def last_name(self, rng: random.Random, original: str, *, context: Context) -> Drawn: ...

    def whole_value(
        self, info_type: str, surface: str, *, rng: random.Random, context: Context
    ) -> Drawn | None: ...


@dataclass
class SurrogateBook:
    """Surrogates of one conversation, in the order mentions are met.

    Args:
        forbidden: whether a candidate (lowercase word or normalized value) is a PI value
            of the corpus (the salted-hash inventory's lookup).
        originals: every lowercase word of every span the conversation's detection found.
    """

    values: RealisticValues
    source: SurrogateSource
    rng: random.Random
    forbidden: Callable[[str], bool]
    originals: frozenset[str]
    names: dict[str, str] = field(default_factory=dict)  # original word -> surrogate word
    words: dict[str, str] = field(default_factory=dict)  # address word -> surrogate word
    entities: dict[str, str] = field(default_factory=dict)  # placeholder -> whole surrogate
    # lowercase place -> its surrogate, whether met alone (LOCATION) or in an address
    places: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)  # an address's street line -> its own
    # The method that chose each name word and entity; of the last mention rendered.
    methods: dict[str, str] = field(default_factory=dict)
    last_method: str = ""
    _used: set[str] = field(default_factory=set)

    def render(self, info_type: str, surface: str, *, entity: str, context: Context) -> str | None:
        """The surrogate of one mention; None when the type has no generator.
        ``last_method`` then says which method chose it."""
        self.last_method = "realistic"
        if info_type == "PERSON_NAME":
            return self._person(surface, context)
        if info_type in ADDRESS_TYPES:
            return self._address(surface, context)
        place = surface.strip().lower() if info_type == "LOCATION" else ""
        if entity not in self.entities and place in self.places:
            self.entities[entity] = shapes.cased(surface, self.places[place])
            self.methods[entity] = self.methods[PLACE_KEY + place]
        if entity not in self.entities:
            # an address's surrogate keeps the original's street and unit words ("Street")
            kept = kept_words(surface, self.values) if info_type == "STREET_ADDRESS" else None
            drawn = self._draw(
                self._whole_value(info_type, surface, context=context),
                surface,
                kept=kept or frozenset(),
            )
            if drawn is None:
                return None
            self.entities[entity], self.methods[entity] = drawn
            if place:
                self._remember_place(place, drawn)
        self.last_method = self.methods[entity]
        return self.entities[entity]

    def _whole_value(
        self, info_type: str, surface: str, *, context: Context
    ) -> Callable[[], Drawn | None]:
        """How a new surrogate of ``surface`` is drawn: an address part by part, its places
        the conversation's (``address_place``); another type by the source."""
        if info_type == "STREET_ADDRESS":
            places = _ConversationPlaces(self)
            return lambda: (address_like(surface, self.rng, values=places), "realistic")
        return lambda: self.source.whole_value(info_type, surface, rng=self.rng, context=context)

    def address_place(self, surface: str, draw: Callable[[str, random.Random], str]) -> str:
        """A place inside an address: the surrogate the conversation already gave it (as a
        place of its own or in another address), else a new one."""
        key = surface.strip().lower()
        if key not in self.places:
            drawn = self._draw(lambda: (draw(surface, self.rng), "realistic"), surface)
            self._remember_place(key, drawn or (shapes.random_like(surface, self.rng), "realistic"))
        return shapes.cased(surface, self.places[key])

    def address_line(self, original: str, make: Callable[[], str]) -> str:
        """A street or unit line of an address: the surrogate the conversation already gave
        the same line ("1257 Lincoln Street" in "... in Anchorage" and read back with its
        city), else a new one, checked alone."""
        key = " ".join(entity_tokens(original))
        if key not in self.lines:
            kept = kept_words(original, self.values)
            drawn = self._draw(lambda: (make(), "realistic"), original, kept=kept)
            self.lines[key] = drawn[0] if drawn else make()
        return shapes.cased(original, self.lines[key])

    def _remember_place(self, key: str, drawn: Drawn) -> None:
        self.places[key], self.methods[PLACE_KEY + key] = drawn

    def _person(self, surface: str, context: Context) -> str:
        separator = shapes.spelled(surface)
        if separator is not None:
            word = "".join(c for c in surface if c.isalnum())
            return shapes.spell(
                self._name_word(word, "first", context=context), surface, separator=separator
            )
        title = _TITLE.match(surface)
        head = title.group(1) if title else ""
        rest = surface[len(head) :]
        words = list(_NAME_WORD.finditer(rest))
        out, cursor = [head], 0
        for i, match in enumerate(words):
            role = "last" if (title and len(words) == 1) or i > 0 else "first"
            out += [
                rest[cursor : match.start()],
                self._name_mention(match.group(), role, context=context),
            ]
            cursor = match.end()
        return "".join(out) + rest[cursor:]

    def _name_mention(self, word: str, role: str, *, context: Context) -> str:
        possessive = _POSSESSIVE.search(word) if len(word) > 3 else None
        stem = word[: possessive.start()] if possessive else word
        if len(stem) == 1:  # an initial: another letter, the same for the conversation
            return shapes.apply_case(stem, self._initial(stem)) + (word[len(stem) :])
        new = self._name_word(stem, role, context=context)
        return shapes.apply_case(stem, new) + (possessive.group() if possessive else "")

    def _initial(self, letter: str) -> str:
        key = letter.lower()
        if key not in self.names:
            self.names[key] = self.rng.choice([c for c in "abcdefghijklmnoprstw" if c != key])
        return self.names[key]

    def _name_word(self, word: str, role: str, *, context: Context) -> str:
        """The surrogate of one name word, drawn on its first mention."""
        key = word.lower()
        if key not in self.names:
            gender = self.values.names.gender(word.title())
            lists = self.values.names
            if role == "first":
                pool = {"male": lists.male, "female": lists.female}.get(gender or "", lists.male)

                def draw() -> Drawn:
                    return self.source.first_name(self.rng, gender, original=word, context=context)
            else:
                pool = lists.last

                def draw() -> Drawn:
                    return self.source.last_name(self.rng, word, context=context)

            drawn = self._draw(draw, word, pool=pool)
            assert drawn is not None  # names always have a generator
            self.names[key], self.methods[key] = drawn[0].lower(), drawn[1]
            self._used.add(self.names[key])
        self.last_method = self.methods[key]
        return self.names[key]

    def _address(self, surface: str, context: Context) -> str:
        """An e-mail address, handle or URL: words built from a name take that name's
        surrogate words, providers and structure words stay, digits are redrawn, and
        other words become a consistent random word."""
        out = []
        for piece in _PIECES.findall(surface):
            key = piece.lower()
            if piece.isdigit():
                out.append(shapes.random_like(piece, self.rng))
            elif not piece[0].isalpha() or key in KEPT_ADDRESS_WORDS:
                out.append(piece)
            elif key in self.names:
                out.append(shapes.apply_case(piece, self.names[key]))
            elif piece.title() in self.values.names.first_set and len(piece) > 2:
                out.append(
                    shapes.apply_case(piece, self._name_word(piece, "first", context=context))
                )
            elif piece.title() in self.values.names.last_set and len(piece) > 2:
                out.append(
                    shapes.apply_case(piece, self._name_word(piece, "last", context=context))
                )
            else:
                if key not in self.words:
                    new = self._draw(lambda: (self.values.word(self.rng), "realistic"), piece)
                    self.words[key] = (new[0] if new else shapes.random_like(key, self.rng)).lower()
                out.append(shapes.apply_case(piece, self.words[key]))
        return "".join(out)

    def _draw(
        self,
        draw: Callable[[], Drawn | None],
        original: str,
        *,
        pool: Sequence[str] = (),
        kept: frozenset[str] = frozenset(),
    ) -> Drawn | None:
        """A candidate that is none of the corpus's PI values nor shares a word with the
        conversation's values (but the ``kept`` words of the original's form); after
        ``MAX_DRAWS`` refusals, the first acceptable one of ``pool`` shuffled, else the
        original's shape at random."""
        for _ in range(MAX_DRAWS):
            drawn = draw()
            if drawn is None:
                return None
            if self._acceptable(drawn[0], original, kept=kept):
                return drawn
        for candidate in self.rng.sample(list(pool), len(pool)):
            if self._acceptable(candidate, original, kept=kept):
                return candidate, "realistic"
        fallback = shapes.random_like(original, self.rng)
        return (fallback, "realistic") if fallback.lower() != original.lower() else None

    def _acceptable(self, candidate: str, original: str, *, kept: frozenset[str]) -> bool:
        value = " ".join(_NAME_WORD.findall(candidate.lower())) or candidate.lower()
        words = set(re.findall(r"[^\W_]+", candidate.lower()))
        original_words = set(re.findall(r"[^\W_]+", original.lower()))
        if candidate.lower() == original.lower() or original.lower() in candidate.lower():
            return False
        name_words = {w for w in words if w.isalpha() and len(w) > 1} - kept
        if name_words & (original_words | self.originals) or name_words & self._used:
            return False
        if self.forbidden(value) or any(self.forbidden(w) for w in name_words):
            return False
        return not any(self.forbidden(run) for run in _word_runs(candidate))


@dataclass(frozen=True)
class _ConversationPlaces:
    """The values an address surrogate is made of, its places the conversation's: the
    city of "12 Oak Street, Boston" is the surrogate of "Boston" said alone."""

    book: SurrogateBook

    def street_line(self, original: str, make: Callable[[], str]) -> str:
        return self.book.address_line(original, make)

    def street_word(self, rng: random.Random) -> str:
        return self.book.values.street_word(rng)

    def city(self, surface: str, rng: random.Random) -> str:
        return self.book.address_place(surface, self.book.values.city)

    def place(self, surface: str, rng: random.Random) -> str:
        return self.book.address_place(surface, self.book.values.place)

    def state_code(self, surface: str, rng: random.Random) -> str:
        return self.book.values.state_code(surface, rng)

    def is_country(self, surface: str) -> bool:
        return self.book.values.is_country(surface)


def _word_runs(candidate: str) -> list[str]:
    """Each run of two or more consecutive words of ``candidate`` (up to ``MAX_RUN_WORDS``),
    normalized as the PI inventory is: the city inside an address ("85 Mueller Street, Lake
    Jennifer") may be a value of the corpus."""
    tokens = entity_tokens(candidate)
    return [
        " ".join(tokens[i : i + n])
        for n in range(2, min(len(tokens), MAX_RUN_WORDS) + 1)
        for i in range(len(tokens) - n + 1)
    ]
