"""The dialogue scripts as data: their line and scenario types, and the reader of ``SCRIPTS``.

The line language is described in ``components.ingest.generate.scripts``; it is read once,
at import, into ``BLOCKS`` and ``SCENARIOS``. ``TEMPLATE_WORDS`` is every word the templates
can write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TypeAlias

from components.ingest.generate import vocabulary as vocab
from components.ingest.generate.scripts import SCRIPTS


@dataclass(frozen=True)
class Slot:
    """A ``{name:form}`` placeholder inside a line of text."""

    name: str
    form: str = ""


Segment: TypeAlias = "str | Slot"


@dataclass(frozen=True)
class Line:
    """One spoken line (its phrasings) or, when ``block`` is set, a block to draw."""

    role: str
    variants: tuple[tuple[Segment, ...], ...] = ()
    optional: bool = False
    block: str = ""


Script: TypeAlias = "tuple[Line, ...]"


@dataclass(frozen=True)
class EndingSpec:
    """One way a scenario can end: its outcome label, label text and closing lines."""

    outcome: str
    summary: str
    action_items: tuple[str, ...]
    script: Script


@dataclass(frozen=True)
class ScenarioSpec:
    """A dialogue scenario: its context, purpose label, opening summary, script, endings."""

    context: str
    purpose: str
    summary: str
    script: Script
    endings: tuple[EndingSpec, ...] = ()


_SLOT = re.compile(r"\{([a-z][a-z0-9_.]*)(?::(spell|spoken|plain))?\}")
_LINE = re.compile(r"(\?)?(?:@([a-z_]+)|([a-z][a-z0-9]*): (.+))")
_HEADER = re.compile(r"(block|scenario|ending|summary|action): (.+)")
_SECTION_KINDS = ("block", "scenario", "ending")


def parse_segments(text: str) -> tuple[Segment, ...]:
    """Split a line of template text into literal strings and slots, in order."""
    segments: list[Segment] = []
    position = 0
    for match in _SLOT.finditer(text):
        if match.start() > position:
            segments.append(text[position : match.start()])
        segments.append(Slot(match[1], match[2] or ""))
        position = match.end()
    if position < len(text):
        segments.append(text[position:])
    return tuple(segments)


def _require(condition: object, message: str) -> None:
    if not condition:
        raise ValueError(f"generate.templates: {message}")


def _parse_script(lines: list[str]) -> Script:
    script: list[Line] = []
    for text in lines:
        if text.startswith("|"):
            _require(script and not script[-1].block, f"a phrasing follows no line: {text!r}")
            last = script[-1]
            variant = parse_segments(text[1:].strip())
            script[-1] = replace(last, variants=(*last.variants, variant))
            continue
        match = _LINE.fullmatch(text)
        if match is None:
            raise ValueError(f"generate.templates: cannot read script line {text!r}")
        optional, block, role, body = match.groups()
        if block:
            script.append(Line("", optional=bool(optional), block=block))
        else:
            script.append(Line(role, (parse_segments(body),), bool(optional)))
    return tuple(script)


def _label(text: str) -> str:
    for segment in parse_segments(text):
        _require(
            not isinstance(segment, Slot) or segment.name in vocab.FILL_VALUES,
            f"label text may only use FILL_VALUES slots: {text!r}",
        )
    return text


def _sections(text: str) -> list[tuple[str, str, list[str]]]:
    """(kind, header value, body lines) for each block, scenario and ending header."""
    sections: list[tuple[str, str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        header = _HEADER.fullmatch(line)
        if header and header[1] in _SECTION_KINDS:
            sections.append((header[1], header[2], []))
        elif line and not line.startswith("#"):
            _require(sections, f"text before the first header: {line!r}")
            sections[-1][2].append(line)
    return sections


def _labels_and_script(lines: list[str]) -> tuple[str, tuple[str, ...], Script]:
    summary: list[str] = []
    actions: list[str] = []
    script: list[str] = []
    for line in lines:
        header = _HEADER.fullmatch(line)
        if header and header[1] == "summary":
            summary.append(header[2])
        elif header and header[1] == "action":
            actions.append(_label(header[2]))
        else:
            script.append(line)
    return _label(" ".join(summary)), tuple(actions), _parse_script(script)


def _read(text: str) -> tuple[dict[str, tuple[Script, ...]], tuple[ScenarioSpec, ...]]:
    """Read ``SCRIPTS`` into its blocks and scenarios, rejecting unknown labels."""
    blocks: dict[str, tuple[Script, ...]] = {}
    scenarios: list[ScenarioSpec] = []
    for kind, value, lines in _sections(text):
        summary, actions, script = _labels_and_script(lines)
        if kind == "block":
            blocks[value] = (*blocks.get(value, ()), script)
        elif kind == "scenario":
            context, _, purpose = value.partition(" ")
            _require(purpose in vocab.PURPOSES.get(context, ()), f"unknown purpose {value!r}")
            scenarios.append(ScenarioSpec(context, purpose, summary, script))
        else:
            _require(value in vocab.OUTCOMES and scenarios, f"unknown outcome {value!r}")
            ending = EndingSpec(value, summary, actions, script)
            scenarios[-1] = replace(scenarios[-1], endings=(*scenarios[-1].endings, ending))
    for scenario in scenarios:
        _require(scenario.endings, f"scenario {scenario.purpose!r} has no ending")
    return blocks, tuple(scenarios)


def _words_of_templates() -> frozenset[str]:
    """Every word the templates can write: no made-up name may be one of them."""
    vocabularies = (
        vocab.CITIES,
        vocab.STREET_NAMES,
        vocab.ORG_SECTORS,
        vocab.MONTHS,
        vocab.SMALL_NUMBERS,
    )
    text = " ".join(
        [_SLOT.sub(" ", SCRIPTS), *vocab.START_FILLERS, *vocab.MID_FILLERS]
        + [value for values in (*vocab.FILL_VALUES.values(), *vocabularies) for value in values]
    )
    return frozenset(word.lower() for word in re.findall(r"[A-Za-z]+", text))


BLOCKS, SCENARIOS = _read(SCRIPTS)
TEMPLATE_WORDS = _words_of_templates()
