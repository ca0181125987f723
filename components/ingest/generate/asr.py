"""How a speech-to-text engine writes a mention: spelled out, said as words, or lowercase."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Protocol

from components.ingest.generate import vocabulary as vocab
from components.ingest.generate.policy import Noise
from components.ingest.generate.values import Item

# Policy keys for spelling out / saying aloud an email address, user name or URL.
_SAID_NOISE = {
    "EMAIL_ADDRESS": ("email_spelled", "email_spoken"),
    "USER_NAME": ("username_spelled", ""),
    "URL": ("", "url_spoken"),
}


def _chance(form: str, wanted: str, *, rng: random.Random, probability: float) -> bool:
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


def _say(text: str, rng: random.Random, *, noise: Noise, spell: bool) -> str:
    """Text read out: words kept or spelled (never after an @), digits as words, symbols named."""
    words, spell_word = [], _speller(rng, noise)
    for token in re.findall(r"[a-z]+|\d+|[^a-z\d]", text.lower()):
        spell = spell and token != "@"
        if token.isdigit():
            words.append(_digit_words(token, rng, noise=noise))
        elif token.isalpha():
            words.append(spell_word(token) if spell else token)
        else:
            words.append(vocab.SPOKEN_SYMBOLS.get(token, token))
    return " ".join(words)


def _digit_words(digits: str, rng: random.Random, *, noise: Noise) -> str:
    words: list[str] = []
    i = 0
    while i < len(digits):
        word = vocab.SMALL_NUMBERS[int(digits[i])]
        if digits[i] == "0" and rng.random() < noise["digit_zero_as_oh"]:
            word = "oh"
        elif digits[i] in vocab.MISHEARD_DIGITS and rng.random() < noise["digit_misheard"]:
            word = vocab.MISHEARD_DIGITS[digits[i]]
        double = digits[i + 1 : i + 2] == digits[i] and rng.random() < noise["digit_double"]
        words.append(f"double {word}" if double else word)
        i += 2 if double else 1
    return " ".join(words)


def number_words(n: int, ordinal: bool = False) -> str:
    """0..99 in words; ``ordinal`` gives first, second, ..., thirty first."""
    small = vocab.ORDINALS if ordinal else vocab.SMALL_NUMBERS
    if n < 20:
        return small[n]
    tens, ones = divmod(n, 10)
    if not ones:
        return vocab.TENS_ORDINALS[tens] if ordinal else vocab.TENS[tens]
    return f"{vocab.TENS[tens]} {small[ones]}"


def year_words(year: int) -> str:
    """A year as said aloud: nineteen oh five, nineteen eighty four, two thousand three."""
    century, rest = divmod(year, 100)
    if century == 20 and rest < 10:
        return "two thousand" + (f" {vocab.SMALL_NUMBERS[rest]}" if rest else "")
    tail = f"oh {vocab.SMALL_NUMBERS[rest]}" if 0 < rest < 10 else number_words(rest)
    return f"{number_words(century)} {tail if rest else 'hundred'}"


def _render_name(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    if _chance(form, "spell", rng=rng, probability=noise["name_spelled"]):
        return " ".join(map(_speller(rng, noise), item.written.split()))
    return _render_text(item, form, rng=rng, noise=noise)


def _render_text(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    lower = _chance(form, "spoken", rng=rng, probability=noise["name_lowercase"])
    return item.written.lower() if lower else item.written


def _render_address(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    number, street = item.parts
    if _chance(form, "spoken", rng=rng, probability=noise["digits_spoken"]):
        return f"{_digit_words(number, rng, noise=noise)} {street.lower()}"
    return _render_text(item, form, rng=rng, noise=noise)


def _render_said(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    spell_key, speak_key = _SAID_NOISE[item.entity_type]
    if spell_key and _chance(form, "spell", rng=rng, probability=noise[spell_key]):
        return _say(item.written, rng, noise=noise, spell=True)
    if speak_key and _chance(form, "spoken", rng=rng, probability=noise[speak_key]):
        return _say(re.sub(r"^https?://", "", item.written), rng, noise=noise, spell=False)
    return item.written


def _render_digits(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    if not _chance(form, "spoken", rng=rng, probability=noise["digits_spoken"]):
        return item.prefix + rng.choice(item.seps).join(item.parts)
    groups = [_digit_words(group, rng, noise=noise) for group in item.parts]
    letters = [char for char in item.prefix if char.isalpha()]
    return " ".join([*letters, rng.choice(item.said_seps).join(groups)])


def _render_date(item: Item, form: str, *, rng: random.Random, noise: Noise) -> str:
    year, month, day = (int(part) for part in item.parts)
    name = vocab.MONTHS[month - 1]
    if _chance(form, "spoken", rng=rng, probability=noise["date_spoken"]):
        words = {"month_word": name.lower(), "ordinal": number_words(day, ordinal=True)}
        return rng.choice(vocab.SPOKEN_DATE_FORMATS).format(**words, year_words=year_words(year))
    return rng.choice(vocab.WRITTEN_DATE_FORMATS).format(month=name, mm=month, day=day, year=year)


class Renderer(Protocol):
    """How one kind of value is said: the item, its form, the call's generator, its noise."""

    def __call__(self, item: Item, form: str, *, rng: random.Random, noise: Noise) -> str: ...


RENDERERS: dict[str, Renderer] = {
    "name": _render_name,
    "text": _render_text,
    "address": _render_address,
    "said": _render_said,
    "digits": _render_digits,
    "date": _render_date,
}
