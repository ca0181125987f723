"""Realistic values per info type, drawn with a conversation's own random generator:
Faker's name, place and company lists for the chosen locale, and shape-kept random values
for numbers and identifiers (``shapes``)."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from components.anonymize.surrogates import shapes
from components.anonymize.surrogates.address import address_like

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_WORD = re.compile(
    r"\b(" + "|".join(m[:3] + f"(?:{m[3:]})?" if len(m) > 3 else m for m in MONTHS) + r")\b\.?",
    re.I,
)
_DIGITS = re.compile(r"\d+")
# A country is kept in an address (a whole country names nobody); these besides the
# locale's list of names.
COUNTRY_SHORT_NAMES = ("USA", "US", "U.S", "U.S.A", "United States", "America", "UK", "U.K")
_HEX = re.compile(r"[0-9A-Fa-f]")


@dataclass(frozen=True)
class NameLists:
    """A locale's first names by gender and its surnames (Faker's person provider)."""

    male: tuple[str, ...]
    female: tuple[str, ...]
    last: tuple[str, ...]

    def gender(self, first: str) -> str | None:
        """The gender a first name implies when only one list holds it."""
        male, female = first in self._male, first in self._female
        return "male" if male and not female else "female" if female and not male else None

    @functools.cached_property
    def _male(self) -> frozenset[str]:
        return frozenset(self.male)

    @functools.cached_property
    def _female(self) -> frozenset[str]:
        return frozenset(self.female)

    @functools.cached_property
    def first_set(self) -> frozenset[str]:
        return self._male | self._female

    @functools.cached_property
    def last_set(self) -> frozenset[str]:
        return frozenset(self.last)


@functools.cache
def name_lists(locale: str) -> NameLists:
    from faker import Faker

    provider = Faker(locale).provider("faker.providers.person")
    male = tuple(dict.fromkeys(getattr(provider, "first_names_male", ())))
    female = tuple(dict.fromkeys(getattr(provider, "first_names_female", ())))
    first = tuple(dict.fromkeys(getattr(provider, "first_names", ())))
    return NameLists(male or first, female or first, tuple(dict.fromkeys(provider.last_names)))


class RealisticValues:
    """Values of one locale; every draw takes the caller's ``random.Random``."""

    def __init__(self, locale: str) -> None:
        from faker import Faker

        self.locale = locale
        self.names = name_lists(locale)
        self._faker = Faker(locale)
        addresses = self._faker.provider("faker.providers.address")
        self._states = frozenset(s.lower() for s in getattr(addresses, "states", ()))
        self._state_codes = tuple(getattr(addresses, "states_abbr", ()))
        self._countries = frozenset(
            c.lower() for c in (*getattr(addresses, "countries", ()), *COUNTRY_SHORT_NAMES)
        )

    def first_name(self, rng: random.Random, gender: str | None) -> str:
        pool = {"male": self.names.male, "female": self.names.female}.get(
            gender or rng.choice(("male", "female"))
        )
        return rng.choice(pool or self.names.male)

    def last_name(self, rng: random.Random) -> str:
        return rng.choice(self.names.last)

    def _faker_value(self, rng: random.Random, method: str) -> str:
        self._faker.seed_instance(rng.getrandbits(64))
        return str(getattr(self._faker, method)())

    def word(self, rng: random.Random) -> str:
        """A word for a domain or a handle that was not built from a name."""
        return self._faker_value(rng, "domain_word").lower()

    def whole_value(self, info_type: str, surface: str, *, rng: random.Random) -> str | None:
        """A value of ``info_type`` in the shape of ``surface``; None when veiltune has no
        generator for the type (the caller keeps a placeholder)."""
        generate = self._by_type.get(info_type)
        return None if generate is None else generate(surface, rng)

    @functools.cached_property
    def _by_type(self) -> dict[str, Callable[[str, random.Random], str]]:
        """Each info type's generator, built once (``whole_value`` runs per entity)."""
        ids = {
            t: shapes.random_like
            for t in (
                "PHONE_NUMBER",
                "GENERIC_ID",
                "PASSPORT",
                "US_DRIVERS_LICENSE_NUMBER",
                "FINANCIAL_ACCOUNT_NUMBER",
                "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER",
                "AMERICAN_BANKERS_CC_ROUTING_NUMBER",
                "ROUTING_NUMBER",
                "CANADA_SOCIAL_INSURANCE_NUMBER",
                "MEDICAL_RECORD_NUMBER",
                "CRYPTO_WALLET_ADDRESS",
                "VEHICLE_IDENTIFICATION_NUMBER",
                "VAT_NUMBER",
                "SWIFT_CODE",
            )
        }
        return {
            **ids,
            "CREDIT_CARD_NUMBER": shapes.luhn_valid,
            "IBAN_CODE": shapes.iban_like,
            "US_SOCIAL_SECURITY_NUMBER": shapes.ssn_like,
            "IP_ADDRESS": shapes.ip_like,
            "MAC_ADDRESS": _hex_like,
            "AGE": lambda s, rng: shapes.small_number_like(s, rng, low=18, high=89),
            "DATE_OF_BIRTH": _date_like,
            "ORGANIZATION_NAME": lambda s, rng: shapes.cased(s, self._faker_value(rng, "company")),
            "STREET_ADDRESS": lambda s, rng: address_like(s, rng, values=self),
            "LOCATION": self.place,
        }

    def place(self, surface: str, rng: random.Random) -> str:
        """A state for a state's name, else a city, cased like ``surface``."""
        kind = "state" if surface.strip().lower() in self._states else "city"
        return shapes.cased(surface, self._faker_value(rng, kind))

    def city(self, surface: str, rng: random.Random) -> str:
        """A city, cased like ``surface`` (a city named like a state: "New York")."""
        return shapes.cased(surface, self._faker_value(rng, "city"))

    def street_line(self, original: str, make: Callable[[], str]) -> str:
        """A new street line each time (a conversation's book keeps them)."""
        return make()

    def street_word(self, rng: random.Random) -> str:
        """The name of a street, without its "Street" (a surname, as Faker's are)."""
        return self.last_name(rng)

    def state_code(self, surface: str, rng: random.Random) -> str:
        """Another state's code ("MA" → "TX"), or letters of its shape where the locale
        has none."""
        others = [code for code in self._state_codes if code != surface.upper()]
        code = rng.choice(others) if others else shapes.random_like(surface, rng)
        return code.lower() if surface.islower() else code

    def is_country(self, surface: str) -> bool:
        """Whether ``surface`` names a country ("Armenia", "USA")."""
        return surface.strip(" .").lower() in self._countries


def _hex_like(surface: str, rng: random.Random) -> str:
    digits = "0123456789abcdef"
    return "".join(
        (rng.choice(digits).upper() if c.isupper() else rng.choice(digits))
        if _HEX.fullmatch(c)
        else c
        for c in surface
    )


def _date_like(surface: str, rng: random.Random) -> str:
    """Month names another month (abbreviated and cased alike), four-digit years 1940–2005,
    shorter numbers 1–12 (a valid day and month alike), number words by class."""

    def month(match: re.Match[str]) -> str:
        word = match.group(0)
        new = rng.choice([m for m in MONTHS if not m.startswith(word[:3].lower())])
        abbreviated = len(word.rstrip(".")) <= 3 and len(word.rstrip(".")) < len(new)
        new = new[:3] + ("." if word.endswith(".") else "") if abbreviated else new
        return shapes.apply_case(word, new)

    def number(match: re.Match[str]) -> str:
        digits = match.group(0)
        if len(digits) == 4:
            return str(rng.randint(1940, 2005))
        if len(digits) <= 2:
            value = rng.randint(1, 12)
            return f"{value:0{len(digits)}d}"
        return shapes.random_like(digits, rng)

    text = _DIGITS.sub(number, _MONTH_WORD.sub(month, surface))
    return shapes.fix_ordinals(shapes.redraw_number_words(text, rng))
