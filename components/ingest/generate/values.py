"""What a conversation mentions: people, organizations and items, made up at the first mention.

Values come from the seeded Faker instance and the vocabularies; ``asr`` decides how each
mention of them is written.
"""

from __future__ import annotations

import calendar
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol

from components.ingest.generate import templates
from components.ingest.generate import vocabulary as vocab

if TYPE_CHECKING:  # faker only where a corpus is generated: a GPU node's runner has none
    from faker import Faker


@dataclass(frozen=True)
class Item:
    """One real-world item a conversation mentions, and what its renderer needs."""

    entity_type: str
    key: str
    kind: str  # which renderer writes its mentions
    written: str = ""  # the normal written form
    parts: tuple[str, ...] = ()  # digit groups, (house number, street) or (year, month, day)
    seps: tuple[str, ...] = ("",)  # what a written number may put between its parts
    said_seps: tuple[str, ...] = (" ", ", ")  # ... and what goes between them when said
    prefix: str = ""  # letters written before a number (ORD-)


class Cast:
    """Everyone and everything one conversation mentions, made up at the first mention."""

    def __init__(self, rng: random.Random, fake: Faker) -> None:
        self.rng, self.fake = rng, fake
        self._items: dict[str, Item] = {}
        self._people: dict[str, tuple[str, str, str]] = {}  # role -> first, last, key
        self._orgs: dict[str, tuple[str, str, str]] = {}  # role -> name, domain, key
        self._fills: dict[str, str] = {}
        self._counts: Counter[str] = Counter()
        self._used: set[str] = set()  # no two items of one conversation share a surface

    def speaker(self, role: str, full: bool) -> tuple[str, str]:
        first, last, key = self.person(role)
        return (f"{first} {last}" if full else first), key

    def fill(self, name: str) -> str:
        if name not in self._fills:
            self._fills[name] = self.rng.choice(vocab.FILL_VALUES[name])
        return self._fills[name]

    def fill_text(self, text: str) -> str:
        """Label text with its (non-personal) slots filled as the dialogue filled them."""
        segments = templates.parse_segments(text)
        return "".join(s if isinstance(s, str) else self.fill(s.name) for s in segments)

    def item(self, name: str) -> Item:
        if name not in self._items:
            self._items[name] = self._new_item(name)
        return self._items[name]

    def _new_item(self, name: str) -> Item:
        owner, _, attr = name.partition(".")
        kind = (attr or owner).rstrip("0123456789")
        if not attr and kind in vocab.ITEM_TYPES:
            owner = ""
        elif owner in vocab.ORG_ROLES and not attr:
            org_name, _, key = self.org(owner)
            # Every organization here employs a speaker: the method's _SPEAKER variant.
            return Item("ORGANIZATION_NAME_SPEAKER", key, "text", org_name)
        elif attr in ("", "first", "last"):
            first, last, key = self.person(owner)
            written = {"": f"{first} {last}", "first": first, "last": last}[attr]
            return Item("PERSON_NAME", key, "name", written)
        entity_type = vocab.ITEM_TYPES[kind]
        made = _MAKERS.get(kind, _make_generic_id)(self, owner, kind=kind)
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
        if self.rng.random() < vocab.VALUE_ODDS["faker_company"]:
            return self.fake.company()
        return f"{self.fake.last_name()} {self.rng.choice(vocab.ORG_SECTORS)}"

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
        return f"{vocab.ENTITY_PREFIX[entity_type]}:{self._counts[entity_type]}"


_MAX_DRAWS = 10_000  # a vocabulary this conversation has used up is a template bug


def _usable_name(value: str) -> bool:
    return (
        value.isascii()
        and value.isalpha()
        and len(value) >= 3
        and value.lower() not in templates.TEMPLATE_WORDS
    )


# ------------------------------------------------------------------------- item makers


def _digits(rng: random.Random, n: int, *, lowest_first: int = 1) -> str:
    first = str(rng.randint(lowest_first, 9))
    return first + "".join(str(rng.randrange(10)) for _ in range(n - 1))


def _chunks(digits: str, size: int) -> tuple[str, ...]:
    """Groups of about ``size`` digits, as even as possible: 10 digits -> 4, 3, 3."""
    count = -(-len(digits) // size)
    bounds = [len(digits) * i // count for i in range(count + 1)]
    return tuple(digits[start:end] for start, end in pairwise(bounds))


def _from_name(cast: Cast, owner: str, *, formats: tuple[str, ...]) -> str:
    """An email local part or user name made from the owner's name (mkowalski, mark.k07)."""
    first, last, _ = cast.person(owner)
    nn = f"{cast.rng.randint(1, 99):02d}"
    fields = {"first": first, "last": last, "f": first[0], "l": last[0], "nn": nn}
    return cast.rng.choice(formats).format(**fields).lower()


def _make_email(cast: Cast, owner: str, *, kind: str) -> Item:
    if owner in vocab.ORG_ROLES:
        local, domain = cast.rng.choice(vocab.ORG_MAILBOXES), cast.org(owner)[1]
    else:
        local, employer = (
            _from_name(cast, owner, formats=vocab.EMAIL_FORMATS),
            vocab.EMPLOYER.get(owner),
        )
        domain = cast.org(employer)[1] if employer else cast.fake.free_email_domain()
    return Item("", "", "said", f"{local}@{domain}")


def _make_user(cast: Cast, owner: str, *, kind: str) -> Item:
    return Item("", "", "said", _from_name(cast, owner, formats=vocab.USER_FORMATS))


def _make_url(cast: Cast, owner: str, *, kind: str) -> Item:
    formats = vocab.URL_FORMATS if owner else vocab.INTERNAL_URL_FORMATS  # no owner: a team page
    host, path = cast.rng.choice(vocab.INTERNAL_HOSTS), cast.rng.choice(vocab.URL_PATHS)
    domain = cast.org(owner or "org")[1]
    return Item(
        "", "", "said", cast.rng.choice(formats).format(domain=domain, host=host, path=path)
    )


def _make_phone(cast: Cast, owner: str, *, kind: str) -> Item:
    groups = (
        _digits(cast.rng, 3, lowest_first=2),
        _digits(cast.rng, 3, lowest_first=2),
        _digits(cast.rng, 4),
    )
    return Item("", "", "digits", parts=groups, seps=vocab.PHONE_SEPARATORS)


def _make_card(cast: Cast, owner: str, *, kind: str) -> Item:
    number = cast.fake.credit_card_number(card_type=cast.rng.choice(vocab.CARD_TYPES))
    return Item("", "", "digits", parts=_chunks(number, 4), seps=vocab.CARD_SEPARATORS)


def _make_ssn(cast: Cast, owner: str, *, kind: str) -> Item:
    groups = tuple(cast.fake.ssn().split("-"))
    return Item("", "", "digits", parts=groups, seps=vocab.SSN_SEPARATORS)


def _make_ip(cast: Cast, owner: str, *, kind: str) -> Item:
    rng = cast.rng
    private = f"192.168.{rng.randint(0, 20)}.{rng.randint(2, 254)}"
    address = private if rng.random() < vocab.VALUE_ODDS["private_ip"] else cast.fake.ipv4_public()
    return Item(
        "", "", "digits", parts=tuple(address.split(".")), seps=(".",), said_seps=(" dot ",)
    )


def _make_generic_id(cast: Cast, owner: str, *, kind: str) -> Item:
    prefixes, (low, high) = vocab.ID_FORMATS[kind]
    prefix, digits = cast.rng.choice(prefixes), _digits(cast.rng, cast.rng.randint(low, high))
    if prefix or len(digits) < 8:
        return Item("", "", "digits", parts=(digits,), prefix=prefix)
    return Item("", "", "digits", parts=_chunks(digits, 4), seps=vocab.ACCOUNT_SEPARATORS)


def _make_address(cast: Cast, owner: str, *, kind: str) -> Item:
    rng = cast.rng
    number = str(rng.randint(*vocab.HOUSE_NUMBERS))
    street = f"{rng.choice(vocab.STREET_NAMES)} {rng.choice(vocab.STREET_SUFFIXES)}"
    if rng.random() < vocab.VALUE_ODDS["unit_number"]:
        street += " " + rng.choice(vocab.UNIT_FORMATS).format(n=rng.randint(1, 40))
    return Item("", "", "address", f"{number} {street}", (number, street))


def _make_city(cast: Cast, owner: str, *, kind: str) -> Item:
    return Item("", "", "text", cast.fresh(lambda: cast.rng.choice(vocab.CITIES), check=False))


def _make_dob(cast: Cast, owner: str, *, kind: str) -> Item:
    year, month = cast.rng.randint(*vocab.BIRTH_YEARS), cast.rng.randint(1, 12)
    day = cast.rng.randint(1, calendar.monthrange(year, month)[1])
    return Item("", "", "date", parts=(str(year), str(month), str(day)))


class _Maker(Protocol):
    """Makes a value of ``kind`` for ``owner`` (a cast member's key)."""

    def __call__(self, cast: Cast, owner: str, *, kind: str) -> Item: ...


_MAKERS: dict[str, _Maker] = {
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
