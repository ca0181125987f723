from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from components.core.errors import InputError
from components.core.paths import INSTALL_ROOT, PACKAGED_POLICY
from components.ingest.sensitivity import LEVEL_RANK, LEVELS, SETTINGS, load_taxonomy

SHIPPED = PACKAGED_POLICY / "taxonomy.yaml"

# The paths the conversation generator plants: the shipped file must hold every one.
REQUIRED_PATHS = (
    "family.high.divorce",
    "family.high.domestic_abuse",
    "family.medium.bereavement",
    "family.low.household_size",
    "healthcare.high.diagnosis",
    "healthcare.high.diagnosis.hiv",
    "healthcare.high.diagnosis.mental_health",
    "healthcare.high.diagnosis.cancer",
    "healthcare.high.medication",
    "healthcare.medium.pregnancy",
    "healthcare.low.appointment",
    "employment.high.dismissal",
    "employment.high.disciplinary",
    "employment.medium.salary",
    "employment.low.job_title",
    "finances.high.debt",
    "finances.high.loan",
    "finances.medium.missed_payment",
    "finances.low.account_type",
    "social_media.high.private_messages",
    "social_media.medium.account_handle",
    "legal.high.criminal_record",
    "legal.high.lawsuit",
    "legal.medium.immigration_status",
    "political.high.party_membership",
    "political.medium.petition",
    "religious.high.religious_belief",
    "religious.medium.religious_observance",
    "sexual_orientation_gender.high.sexual_orientation",
    "sexual_orientation_gender.high.gender_identity",
    "travel_location.medium.travel_plans",
    "travel_location.medium.whereabouts",
    "education.high.special_needs",
    "education.high.disciplinary_record",
    "education.medium.grades",
    "identifiers.high.government_id",
    "identifiers.medium.contact_details",
)

MARK = "# <-"  # ends the line an error must name


def other_settings() -> str:
    """Every setting but family, each with one valid category."""
    return "".join(
        f"  {name}:\n    description: {name}\n    low:\n      thing:\n        description: x\n"
        for name in SETTINGS
        if name != "family"
    )


FAMILY = "  family:\n    description: family\n    high:\n      divorce:\n        description: d\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def marked_line(text: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if MARK in line)


def test_the_shipped_file_has_the_12_settings_and_every_level() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    assert SETTINGS == (
        "family",
        "healthcare",
        "employment",
        "finances",
        "social_media",
        "legal",
        "political",
        "religious",
        "sexual_orientation_gender",
        "travel_location",
        "education",
        "identifiers",
    )
    for setting in SETTINGS:
        entries = taxonomy.categories(setting)
        assert {entry.level for entry in entries} == set(LEVELS), setting
        assert 3 <= sum(entry.subcategory is None for entry in entries) <= 8, setting


def test_the_shipped_file_holds_the_planted_paths() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    assert set(REQUIRED_PATHS) - taxonomy.paths == set()
    for path in taxonomy.paths:
        assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+){2,3}", path), path
        assert taxonomy.description(path).strip() == taxonomy.description(path) != ""


def test_a_subcategory_resolves_to_its_setting_and_level() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    assert "healthcare.high.diagnosis.hiv" in taxonomy
    assert taxonomy.setting("healthcare.high.diagnosis.hiv") == "healthcare"
    assert taxonomy.level("healthcare.high.diagnosis.hiv") == "high"
    entry = taxonomy.category("healthcare.high.diagnosis.hiv")
    assert (entry.category, entry.subcategory) == ("diagnosis", "hiv")
    assert taxonomy.category("finances.high.loan").subcategory is None
    assert taxonomy.level("finances.low.account_type") == "low"
    assert taxonomy.setting("travel_location.medium.whereabouts") == "travel_location"


def test_levels_rank_high_over_medium_over_low() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    assert LEVEL_RANK["high"] > LEVEL_RANK["medium"] > LEVEL_RANK["low"] > 0
    assert taxonomy.rank("finances.high.loan") > taxonomy.rank("finances.medium.missed_payment")
    assert taxonomy.rank("finances.medium.missed_payment") > taxonomy.rank(
        "finances.low.account_type"
    )


def test_unknown_paths_and_settings_raise_key_error() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    assert "finances.high.lottery" not in taxonomy
    for ask in (taxonomy.level, taxonomy.setting, taxonomy.description):
        with pytest.raises(KeyError, match="finances.high.lottery"):
            ask("finances.high.lottery")
    with pytest.raises(KeyError, match="finance"):
        taxonomy.categories("finance")


def test_categories_keep_file_order_with_subcategories_after_their_category() -> None:
    taxonomy = load_taxonomy(SHIPPED)
    paths = [entry.path for entry in taxonomy.categories("healthcare")]
    assert paths[:3] == [
        "healthcare.high.diagnosis",
        "healthcare.high.diagnosis.hiv",
        "healthcare.high.diagnosis.mental_health",
    ]
    assert taxonomy.categories()[0].setting == "family"
    assert len(taxonomy.categories()) == len(taxonomy.paths)


def test_users_extend_it_with_categories_and_subcategories(tmp_path: Path) -> None:
    extra = (
        "  family:\n    description: family\n    high:\n      divorce:\n        description: d\n"
        "        subcategories:\n          contested: a contested divorce\n"
        "    medium:\n      elder_care:\n        description: caring for an elderly parent\n"
    )
    taxonomy = load_taxonomy(write(tmp_path, "settings:\n" + extra + other_settings()))
    assert taxonomy.level("family.high.divorce.contested") == "high"
    assert taxonomy.description("family.medium.elder_care") == "caring for an elderly parent"


def test_the_header_names_the_project_licence() -> None:
    pyproject = tomllib.loads((INSTALL_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    header = SHIPPED.read_text(encoding="utf-8").split("\nsettings:")[0]
    assert pyproject["project"]["license"] in header


# (case, the settings block with MARK on the line to name, key named, what the message says)
BAD_SETTINGS = [
    (
        "unknown setting",
        FAMILY + "  famliy:  # <-\n    description: f\n",
        "settings.famliy",
        "unknown setting; allowed: family, healthcare",
    ),
    (
        "bad level",
        FAMILY[:-1] + "\n    hihg:  # <-\n      loan:\n        description: x\n",
        "settings.family.hihg",
        "one of high, medium, low",
    ),
    (
        "duplicate category key",
        FAMILY + "      divorce:  # <-\n        description: again\n",
        "settings.family.high.divorce",
        "duplicate key (first at line 5)",
    ),
    (
        "duplicate setting",
        FAMILY + "  family:  # <-\n    description: again\n",
        "settings.family",
        "duplicate key (first at line 2)",
    ),
    (
        "duplicate description",
        FAMILY + "        description: again  # <-\n",
        "settings.family.high.divorce.description",
        "duplicate key",
    ),
    (
        "duplicate subcategory",
        FAMILY + "        subcategories:\n          contested: c\n          contested: c  # <-\n",
        "settings.family.high.divorce.subcategories.contested",
        "duplicate key",
    ),
    (
        "same category at two levels",
        FAMILY + "    low:\n      divorce:  # <-\n        description: again\n",
        "settings.family.low.divorce",
        "duplicate category: also family.high.divorce (line 5)",
    ),
    (
        "category not snake_case",
        FAMILY + "      DomesticAbuse:  # <-\n        description: x\n",
        "settings.family.high.DomesticAbuse",
        "not a lower snake_case name",
    ),
    (
        "subcategory not snake_case",
        FAMILY + "        subcategories:\n          two words: x  # <-\n",
        "settings.family.high.divorce.subcategories.two words",
        "not a lower snake_case name",
    ),
    (
        "category without description",
        FAMILY + "      custody:  # <-\n        subcategories:\n          court: x\n",
        "settings.family.high.custody.description",
        "missing",
    ),
    (
        "empty description",
        FAMILY + '      custody:\n        description: ""  # <-\n',
        "settings.family.high.custody.description",
        "empty",
    ),
    (
        "null description",
        FAMILY + "      custody:\n        description:  # <-\n",
        "settings.family.high.custody.description",
        "empty",
    ),
    (
        "empty subcategory description",
        FAMILY + "        subcategories:\n          contested:  # <-\n",
        "settings.family.high.divorce.subcategories.contested",
        "empty",
    ),
    (
        "setting without description",
        "  family:  # <-\n    high:\n      divorce:\n        description: d\n",
        "settings.family.description",
        "missing",
    ),
    (
        "list where a mapping is expected",
        "  family:\n    description: f\n    high:  # <-\n      - divorce\n",
        "settings.family.high",
        "wrong type: a mapping is needed, not a list",
    ),
    (
        "text where a category mapping is expected",
        FAMILY + "      custody: a custody dispute  # <-\n",
        "settings.family.high.custody",
        "wrong type: a mapping is needed, not text",
    ),
    (
        "mapping where a subcategory description is expected",
        FAMILY + "        subcategories:\n          contested:  # <-\n            description: c\n",
        "settings.family.high.divorce.subcategories.contested",
        "wrong type: a one-line description is needed, not a mapping",
    ),
    (
        "list of descriptions",
        FAMILY + "      custody:\n        description:  # <-\n          - one\n          - two\n",
        "settings.family.high.custody.description",
        "wrong type: a one-line description is needed, not a list",
    ),
    (
        "unknown key in a category",
        FAMILY + "        severity: 3  # <-\n",
        "settings.family.high.divorce.severity",
        "unknown key; allowed: description, subcategories",
    ),
    (
        "invalid YAML",
        "  family:\n    description: f: g  # <-\n",
        "",
        "not valid YAML",
    ),
]


@pytest.mark.parametrize(
    ("settings", "key", "says"),
    [case[1:] for case in BAD_SETTINGS],
    ids=[case[0] for case in BAD_SETTINGS],
)
def test_a_bad_file_names_the_file_line_and_key(
    tmp_path: Path, settings: str, *, key: str, says: str
) -> None:
    text = "settings:\n" + settings + other_settings()
    path = write(tmp_path, text)
    with pytest.raises(InputError) as raised:
        load_taxonomy(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{marked_line(text)}: {key}"), message
    assert says in message
    assert "\n" not in message


def test_a_missing_setting_is_named(tmp_path: Path) -> None:
    text = "settings:\n" + FAMILY + other_settings().split("  identifiers:")[0]
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:1: settings: missing "):
        load_taxonomy(path)
    with pytest.raises(InputError, match="missing setting\\(s\\): identifiers; all 12"):
        load_taxonomy(path)


def test_an_unknown_top_level_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "settings:\n" + FAMILY + other_settings() + "version: 2\n")
    line = 1 + (FAMILY + other_settings()).count("\n") + 1
    with pytest.raises(InputError, match=rf":{line}: version: unknown key; only `settings`"):
        load_taxonomy(path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", ": empty taxonomy"),
        ("# only a comment\n", ": empty taxonomy"),
        ("settings:\n", ":1: settings: empty taxonomy"),
        ("- family\n", ":1: \\(top level\\): wrong type: a mapping is needed, not a list"),
    ],
    ids=["empty file", "only comments", "no settings", "a list"],
)
def test_an_empty_or_shapeless_file_is_refused(tmp_path: Path, text: str, *, says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=re.escape(str(path)) + says):
        load_taxonomy(path)


def test_settings_without_any_category_are_an_empty_taxonomy(tmp_path: Path) -> None:
    text = "settings:\n" + "".join(f"  {name}:\n    description: {name}\n" for name in SETTINGS)
    with pytest.raises(InputError, match=":1: settings: empty taxonomy; no category"):
        load_taxonomy(write(tmp_path, text))


def test_a_missing_or_undecodable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nowhere.yaml: no such taxonomy file"):
        load_taxonomy(tmp_path / "nowhere.yaml")
    path = tmp_path / "latin1.yaml"
    path.write_bytes("settings:\n  family:\n    description: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="latin1.yaml: not UTF-8 text"):
        load_taxonomy(path)
