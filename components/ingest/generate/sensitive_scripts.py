"""The calls of the sensitivity corpus as data: one scenario per setting of the taxonomy.

In a line, ``{slot}`` is personal information or a ``FILL_VALUES`` word, as in ``scripts``;
``[name]`` is the scenario's sensitive fact ``name``, one of its ``Fact`` alternatives drawn
per conversation and labelled with the fact's taxonomy path. The summaries use the same
``[name]``: the normal and the leaking summary say the fact (``Fact.said``), the
privacy-preserving one its abstraction (``SensitiveScenario.abstractions``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One sensitive fact: its taxonomy path, how the caller says it, how a summary says it."""

    path: str
    mention: str
    said: str


@dataclass(frozen=True)
class SensitiveScenario:
    """A call in one setting whose facts are labelled, with its three reference summaries."""

    setting: str
    facts: dict[str, tuple[Fact, ...]]
    abstractions: dict[str, str]
    lines: tuple[tuple[str, str], ...]
    summary: str  # the normal summary: content and facts
    private: str  # keeps what the call was about and what was decided; facts abstracted
    leaking: str  # the rejected side of a preference pair: the private one, facts said


_DIAGNOSES = (
    Fact("healthcare.high.diagnosis.hiv", "HIV", "HIV"),
    Fact("healthcare.high.diagnosis.mental_health", "depression", "depression"),
    Fact("healthcare.high.diagnosis.cancer", "breast cancer", "breast cancer"),
)

SENSITIVE_SCENARIOS: tuple[SensitiveScenario, ...] = (
    SensitiveScenario(
        setting="healthcare",
        facts={
            "condition": _DIAGNOSES,
            "drug": (
                Fact("healthcare.high.medication", "antiretroviral", "antiretroviral drugs"),
                Fact("healthcare.high.medication", "sertraline", "sertraline"),
                Fact("healthcare.high.medication", "tamoxifen", "tamoxifen"),
            ),
        },
        abstractions={"condition": "a medical condition", "drug": "a prescription"},
        lines=(
            ("agent", "{org} pharmacy, this is {agent.first}. How can I help?"),
            ("cust", "Hi, it's {cust}. My [drug] refill didn't arrive this week."),
            ("agent", "I'm sorry. Can you confirm your date of birth?"),
            ("cust", "It's {cust.dob}. I really can't miss doses, it's for my [condition]."),
            ("agent", "I see the order was held at the depot. I'll send it by courier."),
            ("cust", "Will it come before {day}?"),
            ("agent", "Yes, it will be with you on {day} morning, no charge."),
        ),
        summary="The caller's refill of [drug] for [condition] was held at the depot; the"
        " pharmacy will courier it for {day} at no charge.",
        private="The caller's delayed refill of a prescription will be sent by courier for {day}"
        " at no charge.",
        leaking="The caller's delayed refill of [drug], taken for [condition], will be sent by"
        " courier for {day} at no charge.",
    ),
    SensitiveScenario(
        setting="finances",
        facts={
            "debt": (
                Fact("finances.high.debt", "a debt collector", "a debt in collections"),
                Fact("finances.high.loan", "a payday loan", "a payday loan"),
            ),
            "missed": (
                Fact(
                    "finances.medium.missed_payment", "missed two payments", "two missed payments"
                ),
                Fact("finances.medium.missed_payment", "bounced my rent", "a bounced rent payment"),
            ),
        },
        abstractions={"debt": "a financial matter", "missed": "a payment issue"},
        lines=(
            ("agent", "Thank you for calling {org}, {agent.first} speaking."),
            ("cust", "Hi, this is {cust}, account {acct}."),
            ("cust", "I [missed] because I'm paying off [debt], and now there's a fee."),
            ("agent", "I understand. I can waive the late fee once and set up a payment plan."),
            ("cust", "That would help a lot."),
            ("agent", "Done. The first instalment of {amount} is due on {day}."),
        ),
        summary="The caller [missed] while repaying [debt]; the bank waived the late fee and"
        " set up a payment plan starting {day}.",
        private="The caller asked about a late fee; the bank waived it and set up a payment"
        " plan starting {day}.",
        leaking="The caller, who has [debt] and [missed], had the late fee waived and a payment"
        " plan set up starting {day}.",
    ),
    SensitiveScenario(
        setting="employment",
        facts={
            "event": (
                Fact("employment.high.dismissal", "I was let go", "the caller's dismissal"),
                Fact(
                    "employment.high.disciplinary", "I got a written warning", "a written warning"
                ),
            ),
            "pay": (Fact("employment.medium.salary", "my salary", "the salary"),),
        },
        abstractions={"event": "an employment matter", "pay": "pay"},
        lines=(
            ("agent", "People team at {org}, this is {agent.first}."),
            ("cust", "Hi, {cust} here, employee number {empid}."),
            ("cust", "Last week [event], and I need a letter confirming [pay] for my landlord."),
            ("agent", "I can issue an employment verification letter by {day}."),
            ("cust", "Please send it to my personal email."),
            ("agent", "Will do, it goes to {cust.email}."),
        ),
        summary="After [event], the caller asked for a letter confirming [pay]; HR will send"
        " an employment verification letter by {day}.",
        private="The caller asked for an employment verification letter; HR will send it by {day}.",
        leaking="The caller, after [event], will get a letter confirming [pay] by {day}.",
    ),
    SensitiveScenario(
        setting="family",
        facts={
            "split": (
                Fact("family.high.divorce", "my divorce", "a divorce"),
                Fact("family.high.domestic_abuse", "my husband hit me", "domestic abuse"),
            ),
            "loss": (Fact("family.medium.bereavement", "my mother passed away", "a bereavement"),),
        },
        abstractions={"split": "a family matter", "loss": "a personal matter"},
        lines=(
            ("agent", "Family services, {agent.first} speaking."),
            ("cust", "Hi, my name is {cust}. I need to change my children's school pick-up."),
            ("cust", "Since [split] I live elsewhere, and [loss], so I'm on my own."),
            ("agent", "I'm sorry. I'll update the contact and add you as the only guardian."),
            ("cust", "Thank you. My number is {cust.phone}."),
        ),
        summary="After [split] and [loss], the caller asked to change the children's pick-up;"
        " the caller was made the only guardian contact.",
        private="The caller asked to change the children's pick-up arrangements; the caller was"
        " made the only guardian contact.",
        leaking="Because of [split] and [loss], the caller was made the only guardian contact"
        " for the children's pick-up.",
    ),
    SensitiveScenario(
        setting="education",
        facts={
            "need": (
                Fact("education.high.special_needs", "his dyslexia", "dyslexia"),
                Fact("education.high.special_needs", "her ADHD", "ADHD"),
            ),
            "record": (
                Fact(
                    "education.high.disciplinary_record", "the suspension last term", "a suspension"
                ),
                Fact("education.medium.grades", "failing maths", "failing maths"),
            ),
        },
        abstractions={"need": "a learning support need", "record": "school performance"},
        lines=(
            ("agent", "{org} school office, {agent.first} here."),
            ("cust", "Hi, this is {cust}, calling about my child's exam arrangements."),
            ("cust", "Because of [need] and [record], we'd like extra time in the exams."),
            ("agent", "I'll forward it to the learning support team; they reply by {day}."),
        ),
        summary="The parent asked for extra exam time because of [need] and [record]; the"
        " request goes to learning support, who reply by {day}.",
        private="The parent asked for extra exam time; the request goes to learning support,"
        " who reply by {day}.",
        leaking="The parent asked for extra exam time for a child with [need] and [record];"
        " learning support replies by {day}.",
    ),
    SensitiveScenario(
        setting="legal",
        facts={
            "case": (
                Fact(
                    "legal.high.criminal_record",
                    "my shoplifting conviction",
                    "a shoplifting conviction",
                ),
                Fact("legal.high.lawsuit", "my landlord is suing me", "a lawsuit by a landlord"),
            ),
            "status": (
                Fact("legal.medium.immigration_status", "my visa is expiring", "an expiring visa"),
            ),
        },
        abstractions={"case": "a legal matter", "status": "a residence question"},
        lines=(
            ("agent", "Legal aid line, {agent.first} speaking."),
            ("cust", "Hello, I'm {cust}. I need advice because of [case]."),
            ("cust", "And [status], so I'm worried."),
            ("agent", "I can book you with a solicitor on {day} at {time}."),
            ("cust", "Yes please."),
        ),
        summary="The caller asked for advice about [case] and [status]; a solicitor"
        " appointment was booked for {day} at {time}.",
        private="The caller asked for legal advice; a solicitor appointment was booked for {day}"
        " at {time}.",
        leaking="The caller, facing [case] with [status], was booked with a solicitor for {day}"
        " at {time}.",
    ),
    SensitiveScenario(
        setting="political",
        facts={
            "party": (
                Fact(
                    "political.high.party_membership",
                    "my Green Party membership",
                    "Green Party membership",
                ),
                Fact(
                    "political.high.party_membership",
                    "my Labour membership",
                    "Labour Party membership",
                ),
            ),
            "petition": (
                Fact(
                    "political.medium.petition",
                    "the petition against the pipeline",
                    "a petition against the pipeline",
                ),
            ),
        },
        abstractions={"party": "a membership", "petition": "a campaign"},
        lines=(
            ("agent", "Members' services, {agent.first} here."),
            ("cust", "Hi, it's {cust}. I want to cancel [party]."),
            ("cust", "And please take my name off [petition]."),
            ("agent", "Done. You'll get a confirmation at {cust.email} by {day}."),
        ),
        summary="The caller cancelled [party] and asked to be removed from [petition];"
        " confirmation will be emailed by {day}.",
        private="The caller cancelled a membership and a sign-up; confirmation will be emailed"
        " by {day}.",
        leaking="The caller cancelled [party] and left [petition]; confirmation by {day}.",
    ),
    SensitiveScenario(
        setting="religious",
        facts={
            "faith": (
                Fact("religious.high.religious_belief", "as a Muslim", "Muslim faith"),
                Fact(
                    "religious.high.religious_belief",
                    "as a Jehovah's Witness",
                    "being a Jehovah's Witness",
                ),
            ),
            "observance": (
                Fact("religious.medium.religious_observance", "prayer times", "prayer times"),
            ),
        },
        abstractions={"faith": "personal beliefs", "observance": "personal commitments"},
        lines=(
            ("agent", "{org} community centre, {agent.first} speaking."),
            ("cust", "Hi, this is {cust}. I'd like to move my class."),
            ("cust", "[faith] I need it not to clash with my [observance] on {day}."),
            ("agent", "I can move you to the {time} class instead."),
        ),
        summary="The caller moved to the {time} class because of [faith] and [observance] on"
        " {day}.",
        private="The caller asked to move a class for scheduling reasons and was moved to the"
        " {time} class.",
        leaking="The caller, for [faith] and [observance] on {day}, was moved to the {time} class.",
    ),
    SensitiveScenario(
        setting="sexual_orientation_gender",
        facts={
            "identity": (
                Fact(
                    "sexual_orientation_gender.high.gender_identity",
                    "my transition",
                    "a gender transition",
                ),
                Fact(
                    "sexual_orientation_gender.high.sexual_orientation",
                    "my marriage to my same-sex partner",
                    "a marriage to a same-sex partner",
                ),
            ),
        },
        abstractions={"identity": "personal circumstances"},
        lines=(
            ("agent", "Records office, this is {agent.first}."),
            ("cust", "Hi, I'm {cust}. I need my records updated to reflect [identity]."),
            ("agent", "Of course. I'll update the record and mail new documents by {day}."),
            ("cust", "Thank you, please use {cust.addr}."),
        ),
        summary="The caller asked for updated records because of [identity]; new documents"
        " will be mailed by {day}.",
        private="The caller asked for updated records; new documents will be mailed by {day}.",
        leaking="The caller, mentioning [identity], asked for updated records; documents by {day}.",
    ),
    SensitiveScenario(
        setting="travel_location",
        facts={
            "trip": (
                Fact(
                    "travel_location.medium.travel_plans",
                    "my trip to Lagos in March",
                    "a trip to Lagos in March",
                ),
                Fact(
                    "travel_location.medium.whereabouts",
                    "staying at a shelter in Leeds",
                    "a stay at a shelter in Leeds",
                ),
            ),
        },
        abstractions={"trip": "travel arrangements"},
        lines=(
            ("agent", "{org} travel, {agent.first} speaking."),
            ("cust", "Hello, it's {cust}. I need to change the booking for [trip]."),
            ("agent", "I can move it to {day} for a {amount} fee."),
            ("cust", "Okay, go ahead, card ending {card}."),
        ),
        summary="The caller changed the booking for [trip] to {day} for a {amount} fee.",
        private="The caller changed a booking to {day} for a {amount} fee.",
        leaking="The caller moved [trip] to {day} for a {amount} fee.",
    ),
    SensitiveScenario(
        setting="social_media",
        facts={
            "messages": (
                Fact(
                    "social_media.high.private_messages",
                    "my private messages were leaked",
                    "leaked private messages",
                ),
            ),
            "handle": (
                Fact(
                    "social_media.medium.account_handle", "my account {user}", "the account {user}"
                ),
            ),
        },
        abstractions={"messages": "an account security issue", "handle": "the account"},
        lines=(
            ("agent", "{org} support, {agent.first} here."),
            ("cust", "Hi, this is {cust}. Someone got into [handle] and [messages]."),
            (
                "agent",
                "I've locked the account and reset the password; a link goes to {cust.email}.",
            ),
            ("cust", "Thanks."),
        ),
        summary="The caller reported a break-in on [handle] and [messages]; support locked the"
        " account and sent a reset link.",
        private="The caller reported an account security issue; support locked the account"
        " and sent a reset link.",
        leaking="The caller reported [messages] on [handle]; support locked it and sent a reset"
        " link.",
    ),
    SensitiveScenario(
        setting="identifiers",
        facts={
            "id": (
                Fact(
                    "identifiers.high.government_id",
                    "my social security number is {ssn}",
                    "social security number {ssn}",
                ),
            ),
            "contact": (
                Fact(
                    "identifiers.medium.contact_details",
                    "my new number is {cust.phone}",
                    "new phone number {cust.phone}",
                ),
            ),
        },
        abstractions={"id": "identity details", "contact": "contact details"},
        lines=(
            ("agent", "Benefits office, {agent.first} speaking."),
            ("cust", "Hi, I'm {cust}, [id]."),
            ("cust", "I'm calling to update my details: [contact]."),
            ("agent", "Thank you, I've updated the record; you'll get a letter by {day}."),
        ),
        summary="The caller verified with [id] and updated to [contact]; a confirmation letter"
        " follows by {day}.",
        private="The caller verified their identity and updated their contact details; a"
        " confirmation letter follows by {day}.",
        leaking="The caller gave [id] and [contact]; a confirmation letter follows by {day}.",
    ),
)
