"""The Cloud DLP ``InspectConfig`` that veiltune's params and policy files describe.

Every custom detector gets a name of its own (``VEILTUNE_...``) so that no two custom info
types share a name and none silently replaces a built-in one; ``DlpRules.info_type_of``
maps each name DLP reports back to the veiltune info type its spans carry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.cloud import dlp_v2

from components.anonymize.config import AnonymizeConfig
from components.anonymize.term_lists import read_terms

Likelihood = dlp_v2.Likelihood
MatchingType = dlp_v2.MatchingType

CUSTOM_PREFIX = "VEILTUNE_"


@dataclass(frozen=True)
class CustomPattern:
    """A transcript pattern as a DLP custom regex (RE2 syntax), and the type it reports."""

    name: str  # the custom info type's name in the request
    info_type: str  # the veiltune info type of its spans
    regex: str
    likelihood: int  # a dlp_v2.Likelihood (its members are typed as int)


SPELLED_LETTERS = CustomPattern(
    "VEILTUNE_SPELLED_LETTERS",
    "PERSON_NAME",  # a spelled run of letters is usually a name (A-L-P-H-A, G O O D)
    r"\b[A-Za-z](?:-[A-Za-z]){2,}\b|\b[A-Z](?: [A-Z]){2,}\b",
    Likelihood.LIKELY,
)
DIGIT_RUN = CustomPattern(
    "VEILTUNE_DIGIT_RUN",
    "GENERIC_ID",  # 3+ digits, whatever their separators: an identifier read out
    r"\b\d(?:[ -]?\d){2,}\b",
    Likelihood.POSSIBLE,
)
# A handle-shaped word (a digit, a dot or an underscore in it): a username only when a
# hotword comes shortly before it, which raises it from VERY_UNLIKELY (under any floor).
USERNAME_CANDIDATE = CustomPattern(
    "VEILTUNE_USER_NAME",
    "USER_NAME",
    r"\b[A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+\b|\b[A-Za-z]+[0-9][A-Za-z0-9]*\b",
    Likelihood.VERY_UNLIKELY,
)
USERNAME_HOTWORD = (
    r"(?i)\b(?:user[ -]?names?|user[ -]?ids?|log[ -]?in(?: name| id)?|handle|"
    r"screen[ -]?name|gamer[ -]?tag|account name|sign[ -]?in name)\b"
)
HOTWORD_WINDOW_BEFORE = 100  # characters before the candidate where the hotword may sit


@dataclass(frozen=True)
class DlpRules:
    """The request's inspect config and the veiltune info type of each reported name."""

    inspect_config: dlp_v2.InspectConfig
    info_type_of: Mapping[str, str]


def dlp_rules(config: AnonymizeConfig, base_dir: Path, *, max_findings: int) -> DlpRules:
    """The ``InspectConfig`` of ``config``'s info types, likelihood floor and policy files
    (named relative to ``base_dir``), quotes off: only offsets come back."""
    selected = list(config.info_types)
    exclusions = _terms(config.exclusions, base_dir, selected=selected)
    dictionaries = _terms(config.dictionaries, base_dir, selected=selected)
    custom = [
        _dictionary_type(f"{CUSTOM_PREFIX}DICTIONARY_{info_type}", words)
        for info_type, words in dictionaries.items()
    ]
    info_type_of = {name: name for name in selected}
    info_type_of.update({f"{CUSTOM_PREFIX}DICTIONARY_{t}": t for t in dictionaries})
    for pattern in (SPELLED_LETTERS, DIGIT_RUN, USERNAME_CANDIDATE):
        if pattern.info_type in selected:
            custom.append(_regex_type(pattern))
            info_type_of[pattern.name] = pattern.info_type
    rule_sets = [
        _exclusion_rules([n for n, t in info_type_of.items() if t == info_type], words)
        for info_type, words in exclusions.items()
    ]
    if USERNAME_CANDIDATE.name in info_type_of:
        rule_sets.append(_hotword_rules(USERNAME_CANDIDATE.name))
    inspect_config = dlp_v2.InspectConfig(
        info_types=[dlp_v2.InfoType(name=name) for name in selected],
        custom_info_types=custom,
        min_likelihood=Likelihood.__members__[config.dlp.min_likelihood],
        include_quote=False,
        limits=dlp_v2.InspectConfig.FindingLimits(max_findings_per_request=max_findings),
        rule_set=rule_sets,
    )
    return DlpRules(inspect_config, info_type_of)


def _terms(
    files: Mapping[str, str], base_dir: Path, *, selected: Sequence[str]
) -> dict[str, list[str]]:
    """The terms of each selected info type's file, in file order."""
    return {t: read_terms(base_dir / path) for t, path in sorted(files.items()) if t in selected}


def _word_list(words: Sequence[str]) -> dlp_v2.CustomInfoType.Dictionary:
    return dlp_v2.CustomInfoType.Dictionary(
        word_list=dlp_v2.CustomInfoType.Dictionary.WordList(words=list(words))
    )


def _dictionary_type(name: str, words: Sequence[str]) -> dlp_v2.CustomInfoType:
    return dlp_v2.CustomInfoType(
        info_type=dlp_v2.InfoType(name=name),
        dictionary=_word_list(words),
        likelihood=Likelihood.VERY_LIKELY,
    )


def _regex_type(pattern: CustomPattern) -> dlp_v2.CustomInfoType:
    return dlp_v2.CustomInfoType(
        info_type=dlp_v2.InfoType(name=pattern.name),
        regex=dlp_v2.CustomInfoType.Regex(pattern=pattern.regex),
        likelihood=pattern.likelihood,
    )


def _exclusion_rules(names: Sequence[str], words: Sequence[str]) -> dlp_v2.InspectionRuleSet:
    """Drop a finding of ``names`` whose whole text is one of ``words``."""
    rule = dlp_v2.ExclusionRule(
        dictionary=_word_list(words), matching_type=MatchingType.MATCHING_TYPE_FULL_MATCH
    )
    return dlp_v2.InspectionRuleSet(
        info_types=[dlp_v2.InfoType(name=n) for n in names],
        rules=[dlp_v2.InspectionRule(exclusion_rule=rule)],
    )


def _hotword_rules(name: str) -> dlp_v2.InspectionRuleSet:
    """A username hotword shortly before a candidate makes it VERY_LIKELY."""
    rule = dlp_v2.CustomInfoType.DetectionRule.HotwordRule(
        hotword_regex=dlp_v2.CustomInfoType.Regex(pattern=USERNAME_HOTWORD),
        proximity=dlp_v2.CustomInfoType.DetectionRule.Proximity(
            window_before=HOTWORD_WINDOW_BEFORE
        ),
        likelihood_adjustment=dlp_v2.CustomInfoType.DetectionRule.LikelihoodAdjustment(
            fixed_likelihood=Likelihood.VERY_LIKELY
        ),
    )
    return dlp_v2.InspectionRuleSet(
        info_types=[dlp_v2.InfoType(name=name)],
        rules=[dlp_v2.InspectionRule(hotword_rule=rule)],
    )
