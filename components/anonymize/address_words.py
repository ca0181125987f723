"""The words of a postal address that are its structure, not anybody's: street suffixes
and the street words of other formats, unit words, connectors, directions. The address
recognizer reads addresses by them (``recognizers/address_block.py``); a surrogate address
keeps them and replaces the rest (``surrogates/address.py``)."""

from __future__ import annotations

import functools
import re

# Regular expression sources (case-insensitive).
STREET_SUFFIX = (
    r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|"
    r"circle|cir|terrace|parkway|pkwy|highway|hwy|square|sq|trail|loop|row|alley|str|strasse|"
    r"straße|gasse|weg|vej|veien|vegen|vegur|laan|straat|plein|allee|gata|gatan|gade|rue|calle|"
    r"via|rua|avenida|ulica|ul)\.?"
)
# Street words that open the name in Romance and Slavic formats.
STREET_PREFIX = (
    r"(?:via|viale|vicolo|corso|piazza|strada|rua|r\.?|rue|av\.?|avenida|calle|c/|carrer|"
    r"camino|paseo|plaza|praça|largo|travessa|estrada|ul\.?|ulica|al\.?|aleja|bd\.?|"
    r"chemin|quai|impasse|allée)"
)
# Street words written as the end of the name ("Grolmanstraße", "Barentszweg").
FUSED_STREET_SUFFIX = (
    r"(?:straße|strasse|straat|weg|vej|gasse|laan|gade|gatan|vägen|veien|vegen|vegur|katu|"
    r"tie|utca)"
)
CONNECTOR = r"(?:de|da|das|do|dos|del|della|di|du|des|la|le|les|van|von|der|den|y|e)"
UNIT_WORD = r"(?:apt|apartment|suite|ste|unit|box|p\.?\s?o\.?|floor|fl|room|#)"
DIRECTION = r"(?:n|s|e|w|ne|nw|se|sw|north|south|east|west)"
# The words that say where two streets meet ("the corner of ... and ...").
CORNER_WORDS = frozenset({"the", "corner", "of", "and", "at"})
CONNECTORS = frozenset(CONNECTOR[3:-1].split("|"))

_STRUCTURE = re.compile(
    rf"(?:{STREET_SUFFIX}|{STREET_PREFIX}\.?|{UNIT_WORD}\.?|{CONNECTOR}|{DIRECTION}\.?)",
    re.IGNORECASE,
)
_FUSED = re.compile(rf"(?P<stem>[^\W\d_]{{2,}}?)(?P<suffix>{FUSED_STREET_SUFFIX})", re.IGNORECASE)


_STREET_SUFFIX_WORD = re.compile(STREET_SUFFIX, re.IGNORECASE)
_UNIT_WORD = re.compile(rf"{UNIT_WORD}\.?", re.IGNORECASE)


def street_suffix(word: str) -> bool:
    """ "Street", "St.", "gasse", "rue": a word that says a street."""
    return _STREET_SUFFIX_WORD.fullmatch(word) is not None


def unit_word(word: str) -> bool:
    """ "Apt.", "Suite", "#", "P.O.": a word that opens a unit or a box."""
    return _UNIT_WORD.fullmatch(word) is not None


@functools.lru_cache(maxsize=4096)
def structure_word(word: str) -> bool:
    """Whether ``word`` (its period included, "St.") is a street, unit, connector,
    direction or corner word: the address's form, kept in its surrogate."""
    return word.lower() in CORNER_WORDS or _STRUCTURE.fullmatch(word) is not None


def fused_street_suffix(word: str) -> str | None:
    """The street word a name ends with ("Barentszweg" → "weg"), or None."""
    match = _FUSED.fullmatch(word)
    return match.group("suffix") if match else None
