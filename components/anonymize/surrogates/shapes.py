"""The shape of a value, kept while its content changes: casing, digit and letter runs,
spelled letters, spoken digits and number words, and the check digits that make a made-up
card number or IBAN well-formed."""

from __future__ import annotations

import random
import re
import string

SPOKEN_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# Number words by class: a word is replaced by one of its class, so "nineteen eighty" stays
# a spoken year and "third" stays an ordinal.
NUMBER_WORD_CLASSES: tuple[tuple[str, ...], ...] = (
    ("oh", *SPOKEN_DIGITS[1:]),
    SPOKEN_DIGITS,
    (
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ),
    ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"),
    (
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "eleventh",
        "twelfth",
    ),
)
_NUMBER_WORD_CLASS = {
    word: words for words in reversed(NUMBER_WORD_CLASSES) for word in words
}  # the first class listing a word wins ("one" is a digit, not after "oh")
# A spelled run: single letters (or digits) joined by one repeated separator: M-A-R-K, j o h n.
SPELLED = re.compile(r"^[A-Za-z0-9](?P<sep>[ .\-–—,]+)[A-Za-z0-9](?:(?P=sep)[A-Za-z0-9])+\.?$")
_WORDS = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]+")
_ORDINAL = re.compile(r"^(\d{1,2})(st|nd|rd|th)$", re.I)


def apply_case(template: str, word: str) -> str:
    """``word`` in the casing of ``template``: lowercase ASR stays lowercase, ALL CAPS stay."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template.islower():
        return word.lower()
    if template[:1].isupper():
        return word[:1].upper() + word[1:].lower()
    return word


def cased(template: str, value: str) -> str:
    """A value of several words in the casing of the text it replaces: lowercase ASR stays
    lowercase, ALL CAPS (longer than an abbreviation) stay, and a lowercase value takes the
    capitals of the words it replaces ("3868 casey street" for "1257 Lincoln Street")."""
    if template.islower():
        return value.lower()
    if template.isupper() and len(template) > 3:
        return value.upper()
    if not value.islower():
        return value
    words, shape = value.split(" "), template.split()
    if len(words) != len(shape):
        return value.title()
    return " ".join(apply_case(t, w) for t, w in zip(shape, words, strict=True))


def spelled(surface: str) -> str | None:
    """The separator of a spelled run (``M-A-R-K`` → ``-``), or None."""
    match = SPELLED.match(surface.strip())
    return match.group("sep") if match else None


def spell(word: str, template: str, *, separator: str) -> str:
    """``word`` spelled letter by letter like ``template`` (``D-A-V-E``)."""
    letters = [apply_case(template[0], c) if c.isalpha() else c for c in word]
    return separator.join(letters) + ("." if template.rstrip().endswith(".") else "")


def random_like(surface: str, rng: random.Random) -> str:
    """Every digit a random digit, every ASCII letter a random letter of its case, spoken
    digits random spoken digits and number words random words of their class; everything
    else (separators, grouping) as it was."""
    out = []
    for piece in _WORDS.findall(surface):
        if piece.isdigit():
            out.append("".join(rng.choice(string.digits) for _ in piece))
        elif piece.isalpha():
            out.append(_random_word_like(piece, rng))
        else:
            out.append(piece)
    return "".join(out)


def _random_word_like(word: str, rng: random.Random) -> str:
    words = _NUMBER_WORD_CLASS.get(word.lower())
    if words is not None:
        return apply_case(word, rng.choice([w for w in words if w != word.lower()]))
    letters = string.ascii_uppercase if word.isupper() else string.ascii_lowercase
    chars = [rng.choice(letters) for _ in word]
    if word[0].isupper() and not word.isupper():
        chars[0] = chars[0].upper()
    return "".join(chars)


def house_number_like(surface: str, rng: random.Random) -> str:
    """A house number in the shape of ``surface``: as many digits, the first never 0 ("12"
    → "47", "7B" → "3K", never "00"); spoken digits likewise ("nine three" → "four oh");
    a range part by part ("12-14")."""
    out, in_run = [], False  # in_run: after a spoken digit of the same number
    for piece in _WORDS.findall(surface):
        low = piece.lower()
        if piece.isdigit():
            out.append(_number_of_width(len(piece), rng, low=1, high=10 ** len(piece) - 1))
        elif low in _SPOKEN_HOUSE_DIGITS:
            out.append(apply_case(piece, rng.choice(_SPOKEN_HOUSE_DIGITS[not in_run :])))
        elif piece.isalpha():
            out.append(_random_word_like(piece, rng))
        else:
            out.append(piece)
        in_run = low in _SPOKEN_HOUSE_DIGITS or (in_run and piece.strip(" -") == "")
    return "".join(out)


# "oh" first: a spoken number's first digit is drawn from the rest.
_SPOKEN_HOUSE_DIGITS = ("oh", *SPOKEN_DIGITS[1:])


def redraw_number_words(text: str, rng: random.Random) -> str:
    """Each number word (``third``, ``nineteen``) another of its class; the rest as it is."""
    return "".join(
        _random_word_like(piece, rng) if piece.lower() in _NUMBER_WORD_CLASS else piece
        for piece in _WORDS.findall(text)
    )


def digits_only(surface: str) -> str:
    return "".join(c for c in surface if c.isdigit())


def replace_digits(surface: str, digits: str) -> str:
    """``surface`` with its digits replaced, in order, by ``digits`` (same count)."""
    it = iter(digits)
    return "".join(next(it) if c.isdigit() else c for c in surface)


def luhn_valid(surface: str, rng: random.Random) -> str:
    """A random number shaped like ``surface``, its first digit kept (the card network) and
    its last digit the Luhn check digit."""
    n = len(digits_only(surface))
    if n < 2:
        return random_like(surface, rng)
    body = digits_only(surface)[0] + "".join(rng.choice(string.digits) for _ in range(n - 2))
    return replace_digits(surface, body + _luhn_digit(body))


def _luhn_digit(body: str) -> str:
    total = 0
    for i, char in enumerate(reversed(body)):
        d = int(char) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def luhn_ok(number: str) -> bool:
    digits = digits_only(number)
    return bool(digits) and _luhn_digit(digits[:-1]) == digits[-1]


def iban_like(surface: str, rng: random.Random) -> str:
    """A random IBAN with the country and grouping of ``surface`` and valid check digits
    (ISO 13616, mod 97)."""
    compact = re.sub(r"\s", "", surface).upper()
    if len(compact) < 5 or not compact[:2].isalpha():
        return random_like(surface, rng)
    country, bban = compact[:2], random_like(compact[4:], rng).upper()
    rearranged = bban + country + "00"
    value = int("".join(str(int(c, 36)) for c in rearranged))
    new = country + f"{98 - value % 97:02d}" + bban
    it = iter(new)
    return "".join(c if c.isspace() else next(it) for c in surface)


def iban_ok(value: str) -> bool:
    compact = re.sub(r"\s", "", value).upper()
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def ssn_like(surface: str, rng: random.Random) -> str:
    """An SSN-shaped number that is never an allocation: area 900–999 is not issued as an
    SSN, and group 01–49 is outside the ITIN ranges (50–65, 70–88, 90–92, 94–99)."""
    if len(digits_only(surface)) != 9:
        return random_like(surface, rng)
    digits = f"9{rng.randrange(100):02d}{rng.randrange(1, 50):02d}{rng.randrange(1, 10000):04d}"
    return replace_digits(surface, digits)


def ip_like(surface: str, rng: random.Random) -> str:
    """Each dotted octet a random 1–254 (IPv4); anything else shaped at random."""
    parts = surface.split(".")
    if len(parts) == 4 and all(p.isdigit() for p in parts):
        return ".".join(str(rng.randrange(1, 255)) for _ in parts)
    return random_like(surface, rng)


def small_number_like(surface: str, rng: random.Random, *, low: int, high: int) -> str:
    """Numbers in ``surface`` (digits or ordinals like ``3rd``) drawn from [low, high] with
    their digit count kept where the range allows; number words by class."""
    out = []
    for piece in _WORDS.findall(surface):
        if piece.isdigit():
            out.append(_number_of_width(len(piece), rng, low=low, high=high))
        elif piece.isalpha() and piece.lower() in _NUMBER_WORD_CLASS:
            out.append(_random_word_like(piece, rng))
        else:
            out.append(piece)
    text = "".join(out)
    return fix_ordinals(text)


def _number_of_width(width: int, rng: random.Random, *, low: int, high: int) -> str:
    lo, hi = max(low, 10 ** (width - 1) if width > 1 else 0), min(high, 10**width - 1)
    if lo > hi:  # a zero-padded "07": keep the width
        return f"{rng.randrange(1, 10):0{width}d}"
    return str(rng.randint(lo, hi))


def fix_ordinals(text: str) -> str:
    """Each ``<n><suffix>`` with the suffix its number takes (``8rd`` → ``8th``)."""

    def suffix(match: re.Match[str]) -> str:
        n = int(match.group(1))
        end = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return match.group(1) + apply_case(match.group(2), end)

    return re.sub(r"\b(\d{1,2})(st|nd|rd|th)\b", suffix, text, flags=re.I)
