"""A street address in the shape of the original: each part replaced by a value of its own
kind, in its place, and everything else kept.

The original is read as lines (cut at commas and line breaks, the separators kept as they
are) and each line as tokens: the house number and a unit's number take a plausible number
of the same width (``shapes.house_number_like``: never 0, never a leading 0); the street's
own name takes a surname ("Oak" → "Wilson", "Barentszweg" → "Wilsonweg"), an ordinal
street another ("5th" → "8th"); the first place a city, a later one a state or a city
(``RealisticValues.place``), a state code a state code, a postal code a code of its shape.
The street, unit, connector and corner words ("Street", "St.", "Apt", "rue du", "the
corner of"), a country, the punctuation and the casing stay. The words it keeps are
``kept_words``: the book lets a surrogate share only those with the original.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from components.anonymize.address_words import (
    CONNECTORS,
    fused_street_suffix,
    street_suffix,
    structure_word,
    unit_word,
)
from components.anonymize.surrogates import shapes

_SPOKEN = r"(?i:(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)(?![^\W\d_]))"
_SPOKEN_NUMBER = re.compile(rf"{_SPOKEN}(?:[\s-]+{_SPOKEN})*")
_ORDINAL = re.compile(r"\d+(?i:st|nd|rd|th)")
_NUMBER = r"\d+(?:[^\W\d_](?![^\W\d_]))?"  # 12, 4B
_TOKEN = re.compile(
    r"(?i:p\.?\s?o\.?)(?=\s+box\b)"  # "P.O. Box": one unit word
    rf"|{_SPOKEN_NUMBER.pattern}"  # nine three eight
    r"|\d+(?i:st|nd|rd|th)(?![^\W\d_])"  # the "5th" of "5th Avenue"
    rf"|{_NUMBER}(?:[-/]{_NUMBER})?"  # 12, 4B, 12-14
    r"|[^\W\d_]+(?:['’.-][^\W\d_]+)*\.?"  # a word, "St." with its period
    r"|[\W_]+",  # what lies between
)
_LINE_BREAK = re.compile(r"([ \t]*(?:,[ \t]*\n?|\n)[ \t>*]*)")
_STATE_CODE = re.compile(r"[A-Z]{2,3}")
# Joins the words of one name ("Capo le Case", "Saint-Jean").
_NAME_JOINER = re.compile(r"[ \t-]+")


class AddressValues(Protocol):
    """What an address's parts are drawn from (``RealisticValues``)."""

    def street_line(self, original: str, make: Callable[[], str]) -> str:
        """The surrogate of a street or unit line: ``make()``, or one made before for the
        same line (a conversation keeps "1257 Lincoln Street" one street)."""
        ...

    def street_word(self, rng: random.Random) -> str: ...

    def city(self, surface: str, rng: random.Random) -> str: ...

    def place(self, surface: str, rng: random.Random) -> str: ...

    def state_code(self, surface: str, rng: random.Random) -> str: ...

    def is_country(self, surface: str) -> bool: ...


@dataclass(frozen=True)
class Part:
    """One piece of an address: ``kind`` says what replaces ``text`` (``kept``: nothing);
    ``street``: a piece of a street or unit line, which is replaced as a whole."""

    # kept | number | ordinal | street_name | city | place | state_code | postal_code
    kind: str
    text: str
    street: bool = False


def address_like(surface: str, rng: random.Random, *, values: AddressValues) -> str:
    """A surrogate of the address ``surface``, part for part (see the module's doc)."""
    fill = _fillers(rng, values)
    out = []
    for street, pieces in itertools.groupby(parse_address(surface, values), lambda p: p.street):
        group = list(pieces)
        if street:
            original = "".join(part.text for part in group)
            out.append(values.street_line(original, functools.partial(_filled, group, fill)))
        else:
            out += [fill[part.kind](part.text) for part in group]
    return "".join(out)


def _filled(parts: list[Part], fill: dict[str, Callable[[str], str]]) -> str:
    return "".join(fill[part.kind](part.text) for part in parts)


def _fillers(rng: random.Random, values: AddressValues) -> dict[str, Callable[[str], str]]:
    """What replaces a part of each kind."""
    return {
        "kept": lambda text: text,
        "number": lambda text: shapes.house_number_like(text, rng),
        "ordinal": lambda text: shapes.small_number_like(text, rng, low=1, high=99),
        "street_name": lambda text: _street_name_like(text, rng, values=values),
        "city": lambda text: values.city(text, rng),
        "place": lambda text: values.place(text, rng),
        "state_code": lambda text: values.state_code(text, rng),
        "postal_code": lambda text: shapes.random_like(text, rng),
    }


def kept_words(surface: str, values: AddressValues) -> frozenset[str]:
    """The lowercase words of ``surface`` that its surrogate keeps (street and unit words,
    connectors, a country)."""
    return frozenset(
        word.lower()
        for part in parse_address(surface, values)
        if part.kind == "kept"
        for word in re.findall(r"[^\W\d_]+", part.text)
    )


def parse_address(surface: str, values: AddressValues) -> list[Part]:
    """The parts of ``surface`` in order; their texts joined are ``surface``."""
    parts: list[Part] = []
    for i, line in enumerate(_LINE_BREAK.split(surface)):
        if i % 2:  # a separator
            parts.append(Part("kept", line))
        elif line:
            tokens = _TOKEN.findall(line)
            # the first line is the street's where it has a number or a street word ("Boston
            # MA 02134" has none); a later one is a unit's ("Apt. 224") or a place's
            street = unit_word(tokens[0]) or (
                i == 0 and any(_is_number(t) or structure_word(t) for t in tokens)
            )
            if street:
                parts += [replace(part, street=True) for part in _street_parts(tokens)]
            else:
                parts += _place_parts(tokens, values)
    return _merged(_city_first(parts))


def _city_first(parts: list[Part]) -> list[Part]:
    """The first place of an address is its city ("New York, NY"); a later one may be a
    state ("Denver, Colorado")."""
    first = next((i for i, part in enumerate(parts) if part.kind == "place"), None)
    if first is None:
        return parts
    return [*parts[:first], replace(parts[first], kind="city"), *parts[first + 1 :]]


def _street_parts(tokens: list[str]) -> list[Part]:
    """A street or unit line: numbers, the street's name words (one run a name, connectors
    inside it included), and the structure words between them."""
    parts: list[Part] = []
    run: list[str] = []  # the open name run, with what joins its words
    for token in tokens:
        if _ORDINAL.fullmatch(token):
            kind = "ordinal"
        elif _is_number(token):
            kind = "number"
        elif structure_word(token) or not token[0].isalpha():
            kind = "kept"
        else:
            kind = "street_name"
        joins = bool(run) and (bool(_NAME_JOINER.fullmatch(token)) or _connector(token))
        if kind == "street_name" or joins:
            run.append(token)
            continue
        parts += _close_run(run)
        run = []
        parts.append(Part(kind, token))
    return _named_street(parts + _close_run(run))


def _named_street(parts: list[Part]) -> list[Part]:
    """A street whose name is itself a street or direction word ("Court Street", "North
    Street"): that word is the name, not the form."""
    if any(part.kind == "street_name" for part in parts):
        return parts
    words = [i for i, part in enumerate(parts) if part.text[:1].isalpha()]
    if len(words) < 2 or not street_suffix(parts[words[-1]].text):
        return parts
    name, suffix = words[-2], words[-1]
    if parts[name].kind != "kept" or suffix != name + 2 or not parts[name + 1].text.isspace():
        return parts
    return [*parts[:name], Part("street_name", parts[name].text), *parts[name + 1 :]]


def _close_run(run: list[str]) -> list[Part]:
    """A name run as its name, and the joiners and connectors after its last name word."""
    last = max((i for i, t in enumerate(run) if _named(t)), default=-1)
    name = [Part("street_name", "".join(run[: last + 1]))] if last >= 0 else []
    return name + [Part("kept", token) for token in run[last + 1 :]]


def _place_parts(tokens: list[str], values: AddressValues) -> list[Part]:
    """A city, state, postal code or country line ("St. Louis", "MO 63101", "Armenia")."""
    parts: list[Part] = []
    run: list[str] = []
    for token in tokens:
        code = bool(_STATE_CODE.fullmatch(token)) and not values.is_country(token)  # not "USA"
        if token[0].isalpha() and not code:
            run.append(token)
            continue
        if run and _NAME_JOINER.fullmatch(token):
            run.append(token)
            continue
        parts += _place_run(run, values)
        run = []
        if code:
            parts.append(Part("state_code", token))
        elif any(c.isdigit() for c in token):
            parts.append(Part("postal_code", token))
        else:
            parts.append(Part("kept", token))
    return parts + _place_run(run, values)


def _place_run(run: list[str], values: AddressValues) -> list[Part]:
    """A run of words as a place (a country stays), its trailing joiners kept."""
    last = max((i for i, t in enumerate(run) if _named(t)), default=-1)
    name = "".join(run[: last + 1])
    head = [Part("kept" if values.is_country(name) else "place", name)] if name else []
    return head + [Part("kept", token) for token in run[last + 1 :]]


def _merged(parts: list[Part]) -> list[Part]:
    """Neighbouring kept parts of one line as one."""
    merged: list[Part] = []
    for part in parts:
        last = merged[-1] if merged else None
        if last and part.kind == last.kind == "kept" and part.street == last.street:
            merged[-1] = replace(last, text=last.text + part.text)
        elif part.text:
            merged.append(part)
    return merged


def _street_name_like(name: str, rng: random.Random, *, values: AddressValues) -> str:
    """Another street name, one word, cased like ``name``; a street word fused to the
    name stays fused ("Barentszweg" → "Wilsonweg")."""
    last = re.split(r"[ \t-]+", name)[-1]
    suffix = fused_street_suffix(last) or ""
    return shapes.apply_case(name.split()[0], values.street_word(rng).lower() + suffix.lower())


def _is_number(token: str) -> bool:
    return token[:1].isdigit() or _SPOKEN_NUMBER.fullmatch(token) is not None


def _named(token: str) -> bool:
    return token[:1].isalpha() and not _connector(token)


def _connector(token: str) -> bool:
    return token.lower() in CONNECTORS
