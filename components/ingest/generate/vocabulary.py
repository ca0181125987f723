"""What the generated calls are made of: contexts and labels, item formats and vocabularies."""

from __future__ import annotations


def _items(text: str) -> tuple[str, ...]:
    """A vocabulary written as ``a | b | c`` (so the formatter keeps it compact)."""
    return tuple(item.strip() for item in text.split("|") if item.strip())


# How often each context is drawn: one shuffled "bag" of these counts per block of calls.
CONTEXT_WEIGHTS = {
    "customer_support": 3,
    "sales": 2,
    "internal_meeting": 1,
    "one_to_one": 1,
    "voicemail": 1,
}
PURPOSES = {
    "customer_support": _items(
        "billing_question | address_change | cancel_subscription | technical_issue"
        " | order_status | account_access | payment_update | fraud_report"
    ),
    "sales": _items(
        "product_demo | pricing_negotiation | renewal | lead_qualification | upgrade_offer"
        " | security_review"
    ),
    "internal_meeting": _items(
        "project_update | planning | incident_review | hiring_discussion | client_escalation"
        " | office_move"
    ),
    "one_to_one": _items(
        "performance_review | career_development | workload_check_in | onboarding"
        " | relocation_request | payroll_issue"
    ),
    "voicemail": _items(
        "callback_request | appointment_confirmation | payment_reminder | order_update"
        " | sales_follow_up | ticket_update"
    ),
}
OUTCOMES = _items(
    "resolved | escalated | follow_up_needed | retained | sale_closed | no_decision"
    " | meeting_scheduled | callback_requested | information_shared"
)
# Blocks appended after each scenario of a context, and contexts whose consecutive lines by
# one speaker stay separate turns (an ASR engine segments a voicemail at pauses).
CLOSING_BLOCKS = {
    "customer_support": "support_close",
    "sales": "sales_close",
    "internal_meeting": "meeting_close",
    "one_to_one": "one_to_one_close",
}
SEGMENTED_CONTEXTS = ("voicemail",)

# Slots that name organizations, and whose staff write from the organization's domain.
ORG_ROLES = ("org", "client", "vendor")
EMPLOYER = {
    "agent": "org",
    "caller": "org",
    "p1": "org",
    "p2": "org",
    "p3": "org",
    "mgr": "org",
    "emp": "org",
    "colleague": "org",
    "contact": "client",
}
# What each owned or standalone item is (the kind of slot, trailing digits removed).
ITEM_TYPES = {
    "email": "EMAIL_ADDRESS",
    "phone": "PHONE_NUMBER",
    "addr": "STREET_ADDRESS",
    "city": "LOCATION",
    "card": "CREDIT_CARD_NUMBER",
    "ssn": "US_SOCIAL_SECURITY_NUMBER",
    "ip": "IP_ADDRESS",
    "url": "URL",
    "dob": "DATE_OF_BIRTH",
    "user": "USER_NAME",
    "acct": "GENERIC_ID",
    "order": "GENERIC_ID",
    "ticket": "GENERIC_ID",
    "empid": "GENERIC_ID",
}
ENTITY_PREFIX = {
    "PERSON_NAME": "person",
    "ORGANIZATION_NAME": "org",
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "STREET_ADDRESS": "address",
    "LOCATION": "location",
    "CREDIT_CARD_NUMBER": "card",
    "US_SOCIAL_SECURITY_NUMBER": "ssn",
    "IP_ADDRESS": "ip",
    "URL": "url",
    "DATE_OF_BIRTH": "dob",
    "USER_NAME": "user",
    "GENERIC_ID": "id",
}
# Generic identifiers: written prefixes ("" for digits only) and the digit-count range.
ID_FORMATS = {
    "acct": (("",), (8, 10)),
    "order": (("", "W", "ORD-", "A"), (6, 9)),
    "ticket": (("TCK-", "INC", "CS-", ""), (5, 7)),
    "empid": (("E", "EMP-", ""), (5, 6)),
}
CARD_TYPES = ("visa16", "mastercard", "discover")
# How often a made-up value takes one shape rather than another.
VALUE_ODDS = {
    "faker_company": 0.5,  # a Faker company name, else "<last name> <sector>"
    "private_ip": 0.3,  # a home-router address, else a public one
    "unit_number": 0.25,  # a street address with an apartment or suite
}
HOUSE_NUMBERS = (10, 9899)
BIRTH_YEARS = (1945, 2004)  # fixed, not relative to today, so a seed always gives one corpus
ORG_MAILBOXES = ("support", "billing", "help")
ORG_SECTORS = _items(
    "Telecom | Wireless | Energy | Insurance | Home Goods | Outfitters | Software | Health"
    " | Financial | Logistics | Analytics | Labs"
)
CITIES = _items(
    "Sacramento | Denver | Portland | Tucson | Milwaukee | Cleveland | Pittsburgh | Baltimore"
    " | Richmond | Raleigh | Nashville | Louisville | Minneapolis | Omaha | Albuquerque"
    " | Boise | Spokane | Tampa | Orlando | Atlanta | Chicago | Seattle | Boston | Philadelphia"
    " | San Diego | Columbus | Indianapolis | Kansas City | Salt Lake City | Des Moines"
    " | Cincinnati | Hartford | Providence | Anchorage"
)
STREET_NAMES = _items(
    "Oak | Maple | Cedar | Elm | Pine | Willow | Chestnut | Highland | Lincoln | Washington"
    " | Jefferson | Franklin | Sunset | Lakeview | Ridge | Meadow"
)
STREET_SUFFIXES = _items("Street | Avenue | Road | Drive | Lane | Court | Boulevard | Way")
UNIT_FORMATS = _items("Apt {n} | Apartment {n} | Unit {n} | Suite {n}")
URL_PATHS = _items("support | account | billing | login | help | pay | status | docs")
INTERNAL_HOSTS = _items("wiki | docs | status | dashboard | jira")
URL_FORMATS = _items("www.{domain}/{path} | https://{domain}/{path} | {domain}/{path}")
INTERNAL_URL_FORMATS = _items("https://{host}.{domain}/{path} | {host}.{domain}/{path}")
USER_FORMATS = _items("{f}{last} | {first}.{last} | {first}{l}{nn} | {first}_{last} | {last}{nn}")
EMAIL_FORMATS = _items("{first}.{last} | {first}{last} | {f}{last} | {first}.{last}{nn}")
PHONE_SEPARATORS = ("-", "-", ".", " ", "")
CARD_SEPARATORS = (" ", " ", "-", "")
SSN_SEPARATORS = ("-", "-", " ", "")
ACCOUNT_SEPARATORS = ("", "", " ", "-")

MONTHS = _items(
    "January | February | March | April | May | June | July | August | September | October"
    " | November | December"
)
WRITTEN_DATE_FORMATS = _items(
    "{month} {day}, {year} | {mm:02d}/{day:02d}/{year} | {mm}/{day}/{year} | {day} {month} {year}"
)
SPOKEN_DATE_FORMATS = _items(
    "{month_word} {ordinal} {year_words} | {ordinal} of {month_word} {year_words}"
)
SMALL_NUMBERS = _items(
    "zero | one | two | three | four | five | six | seven | eight | nine | ten | eleven"
    " | twelve | thirteen | fourteen | fifteen | sixteen | seventeen | eighteen | nineteen"
)
TENS = ("", "", *_items("twenty | thirty | forty | fifty | sixty | seventy | eighty | ninety"))
ORDINALS = (
    "",
    *_items(
        "first | second | third | fourth | fifth | sixth | seventh | eighth | ninth | tenth"
        " | eleventh | twelfth | thirteenth | fourteenth | fifteenth | sixteenth"
        " | seventeenth | eighteenth | nineteenth"
    ),
)
TENS_ORDINALS = {2: "twentieth", 3: "thirtieth"}
SPOKEN_SYMBOLS = {".": "dot", "_": "underscore", "-": "dash", "/": "slash", "@": "at"}
MISHEARD_DIGITS = {"4": "for"}  # what an ASR engine writes for a digit said inside a run

START_FILLERS = ("Um, ", "Uh, ", "So, um, ", "Yeah, uh, ", "Okay, so ", "Uh ", "Um ")
MID_FILLERS = (", um,", ", uh,", ", you know,", ", like,", " um", " uh")

# Non-personal values a script may mention; one is drawn per conversation and slot.
FILL_VALUES = {
    "amount": _items("$49.99 | $129 | $19.99 | $75 | $240 | $15.50 | $89.95 | $310"),
    "plan": _items("Basic | Plus | Premium | Family | Business | Unlimited"),
    "product": _items(
        "wireless router | standing desk | coffee maker | laptop stand | smart thermostat"
        " | noise-cancelling headset | office chair"
    ),
    "offering": _items(
        "the scheduling platform | the analytics suite | the CRM | the reporting module"
        " | the help desk software"
    ),
    "day": _items("Monday | Tuesday | Wednesday | Thursday | Friday"),
    "time": _items("10 a.m. | 2:30 | 9:15 | 3 p.m. | 11 o'clock | 4:45"),
    "window": _items("8 and noon | noon and 4 | 1 and 5"),
    "carrier": _items("UPS | FedEx | the postal service | DHL"),
    "percent": _items("15 percent | 20 percent | 25% | 10 percent"),
    "seats": _items("25 | forty | 60 | a hundred and twenty | 12 | about 80"),
    "feature": _items(
        "single sign-on | advanced reporting | the mobile app | audit logs | API access"
    ),
    "project": _items(
        "the billing migration | the mobile redesign | Project Atlas"
        " | the data warehouse rollout | the onboarding revamp"
    ),
    "quarter": _items("Q3 | Q4 | next quarter | Q1"),
    "position": _items("senior backend engineer | product designer | support lead | data analyst"),
    "topic": _items("customer retention | remote onboarding | sales forecasting"),
}
