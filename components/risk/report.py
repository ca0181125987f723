"""Human-readable renderings of residual risk: Markdown table, histogram, HTML pages.

Everything here is a pure function from data to text or bytes; writing the result to a file,
an MLflow artifact or a Prefect artifact is the caller's job. HTML pages are self-contained
(inline CSS, images as data URIs, no scripts, no external resources) so that reviewers can
read them offline, and every string that comes from data is escaped.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

from components.core.errors import InputError
from components.core.placeholders import NUMBERED_PLACEHOLDER
from components.core.purge import CONVERSATION_TEXT_MARK

# (summary key, column header, shown as an int when integral)
_COLUMNS = (
    ("count", "count", True),
    ("mean", "mean", False),
    ("std", "std", False),
    ("p95", "P95", False),
    ("max", "max", True),
    ("mu_plus_sigma", "μ+σ", False),
)
_HEADERS = ("context", *(header for _, header, _ in _COLUMNS), "gate")
_TOTAL = "total"
# Placeholders as components.core.placeholders writes them: [PERSON_NAME_1].
_RECORD_KEYS = ("id", "context", "risk_band", "turns")

ANNOTATION_INSTRUCTIONS = """\
How to review

This page is for reading only. Annotate in the JSONL file the page was made from: edit the
"text" of the turns there, then import your annotations with

    veiltune review import --input FILE

Placeholders such as [PERSON_NAME_1] are highlighted: they mark information that was
anonymized. Look for personal information that survived, and wrap each missed value as

    (missed text)[MISSED_<INFO_TYPE>]

where <INFO_TYPE> is the info type the value should have been replaced as (PERSON_NAME,
ORGANIZATION_NAME, PRODUCT_NAME, PHONE_NUMBER, EMAIL_ADDRESS, ...). Optional suffixes,
_SPEAKER before _PARTIAL when both apply:

  _PARTIAL  only part of the value survived, e.g. a surname next to a placeholder:
            [PERSON_NAME_1] (Green)[MISSED_PERSON_NAME_PARTIAL]
  _SPEAKER  for ORGANIZATION_NAME or PRODUCT_NAME only: the name belongs to a speaker
            (their employer, their own product) rather than being a topic of conversation

Examples

    (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]
    (Green)[MISSED_PERSON_NAME_PARTIAL]
    (555 0199)[MISSED_PHONE_NUMBER]
    (Dunder)[MISSED_ORGANIZATION_NAME_SPEAKER_PARTIAL]
"""

_REPORT_CSS = """\
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.7em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; border-top: 2px solid #444; }
.pass { color: #1a7f37; }
.fail { color: #c62828; }
img { max-width: 100%; }
"""

_REVIEW_CSS = """\
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
pre.instructions { background: #f4f4f4; padding: 1em; white-space: pre-wrap; }
section.record { border-top: 1px solid #bbb; padding: 0.5em 0; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.meta dt { font-weight: bold; }
dl.meta dd { margin: 0; }
p.turn { white-space: pre-wrap; margin: 0.4em 0; }
span.placeholder { background: #fff3b0; border-radius: 3px; padding: 0 0.15em;
  font-family: ui-monospace, monospace; }
"""


def _number(value: float, integral_as_int: bool) -> str:
    if integral_as_int and float(value).is_integer():
        return str(int(value))
    return f"{float(value):.3f}"


def _gate_mark(mu_plus_sigma: float, threshold: float) -> tuple[bool, str]:
    """Whether μ+σ passes (strictly below the threshold, as the gate has it) and its mark."""
    passed = mu_plus_sigma < threshold
    return passed, f"< {threshold:g} ✓" if passed else f"≥ {threshold:g} ✗"


def _table_rows(summary: Mapping[str, Any], threshold: float) -> list[tuple[str, list[str], bool]]:
    """(label, formatted cells, passed) per context, sorted, then the total row."""
    by_context: Mapping[str, Mapping[str, Any]] = summary.get("by_context", {})
    labelled = [(str(name), by_context[name]) for name in sorted(by_context)]
    rows = []
    for label, stats in [*labelled, (_TOTAL, summary)]:
        cells = [_number(stats[key], as_int) for key, _, as_int in _COLUMNS]
        passed, mark = _gate_mark(float(stats["mu_plus_sigma"]), threshold)
        rows.append((label, [*cells, mark], passed))
    return rows


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def risk_table_markdown(summary: Mapping[str, Any], threshold: float) -> str:
    """Residual risk per context and in total as a Markdown table.

    Args:
        summary: what ``components.risk.scoring.summarize_risk`` returns.
        threshold: the gate threshold; the last column says whether μ+σ is below it.
    """
    lines = [
        "| " + " | ".join(_HEADERS) + " |",
        "|---|" + "---:|" * len(_COLUMNS) + ":---:|",
    ]
    for label, cells, _ in _table_rows(summary, threshold):
        name = f"**{label}**" if label == _TOTAL else _markdown_cell(label)
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return "\n".join(lines) + "\n"


def _integer_bins(scores: Sequence[int]) -> list[float]:
    low, high = (min(scores), max(scores)) if scores else (0, 0)
    return [edge - 0.5 for edge in range(int(low), int(high) + 2)]


def risk_histogram_png(scores: Sequence[int], threshold: float, mean: float, std: float) -> bytes:
    """Histogram of per-conversation risk scores with the mean, μ+σ and the threshold marked.

    The PNG carries no software or time metadata, so identical input gives identical bytes.
    """
    # Imported here so that importing this module stays cheap and never picks a GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.hist(list(scores), bins=_integer_bins(scores), color="#8da0cb", edgecolor="#4a5a8a")
    axes.axvline(mean, color="#333333", linestyle="-", label=f"mean = {mean:.3f}")
    axes.axvline(mean + std, color="#e78a00", linestyle="--", label=f"μ+σ = {mean + std:.3f}")
    axes.axvline(threshold, color="#c62828", linestyle=":", label=f"threshold = {threshold:g}")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("residual risk score per conversation")
    axes.set_ylabel("conversations")
    axes.set_title(f"Residual risk ({len(scores)} conversations)")
    axes.legend()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _html_table(summary: Mapping[str, Any], threshold: float) -> str:
    head = "".join(f"<th>{html.escape(header)}</th>" for header in _HEADERS)
    body = []
    for label, cells, passed in _table_rows(summary, threshold):
        numbers = "".join(f'<td class="num">{html.escape(cell)}</td>' for cell in cells[:-1])
        verdict = "pass" if passed else "fail"
        row_class = ' class="total"' if label == _TOTAL else ""
        body.append(
            f"<tr{row_class}><td>{html.escape(label)}</td>{numbers}"
            f'<td class="{verdict}">{html.escape(cells[-1])}</td></tr>'
        )
    rows = "\n".join(body)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table>"


def _page(title: str, css: str, body: str, head: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{head}<title>{html.escape(title)}</title>\n<style>\n{css}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def risk_report_html(
    summary: Mapping[str, Any],
    threshold: float,
    histogram_png: bytes,
    title: str = "Residual risk",
) -> str:
    """One self-contained HTML page: the risk table, the gate statement and the histogram."""
    mu_plus_sigma = float(summary["mu_plus_sigma"])
    passed, _ = _gate_mark(mu_plus_sigma, threshold)
    relation, verdict = ("<", "passes") if passed else ("≥", "fails")
    statement = (
        f'<p class="{"pass" if passed else "fail"}">Gate statistic μ+σ = {mu_plus_sigma:.3f} '
        f"{html.escape(relation)} threshold {threshold:g}: the corpus {verdict} the gate.</p>"
    )
    image = base64.b64encode(histogram_png).decode("ascii")
    body = "\n".join(
        [
            f"<h1>{html.escape(title)}</h1>",
            statement,
            _html_table(summary, threshold),
            f'<img alt="Histogram of residual risk scores" src="data:image/png;base64,{image}">',
        ]
    )
    return _page(title, _REPORT_CSS, body)


def highlight_placeholders(text: str) -> str:
    """``text`` escaped for HTML, with every ``[TYPE_N]`` placeholder wrapped in a span."""
    parts = []
    position = 0
    for match in NUMBERED_PLACEHOLDER.finditer(text):
        parts.append(html.escape(text[position : match.start()]))
        parts.append(f'<span class="placeholder">{html.escape(match.group())}</span>')
        position = match.end()
    parts.append(html.escape(text[position:]))
    return "".join(parts)


def _turn_html(turn: Mapping[str, Any]) -> str:
    speaker = turn.get("speaker")
    label = f"<strong>{highlight_placeholders(str(speaker))}:</strong> " if speaker else ""
    return f'<p class="turn">{label}{highlight_placeholders(str(turn["text"]))}</p>'


def _record_html(index: int, record: Mapping[str, Any]) -> str:
    missing = [key for key in _RECORD_KEYS if key not in record]
    if missing:
        raise InputError(f"review record {index} lacks {', '.join(missing)}")
    meta = "".join(
        f"<dt>{name}</dt><dd>{html.escape(str(record[key]))}</dd>"
        for name, key in (("context", "context"), ("risk band", "risk_band"))
    )
    try:
        turns = "\n".join(_turn_html(turn) for turn in record["turns"])
    except KeyError as exc:
        raise InputError(f"review record {index} has a turn without {exc}") from exc
    return (
        f'<section class="record">\n<h2>{html.escape(str(record["id"]))}</h2>\n'
        f'<dl class="meta">{meta}</dl>\n{turns}\n</section>'
    )


def review_page_html(
    records: Sequence[Mapping[str, Any]], instructions_md: str | None = None
) -> str:
    """A self-contained HTML page for reviewers to read anonymized conversations offline.

    Args:
        records: ``{"id", "context", "risk_band", "turns": [{"speaker", "text"}]}`` each.
        instructions_md: shown at the top, preformatted; ``ANNOTATION_INSTRUCTIONS`` if None,
            nothing if empty.

    Raises:
        InputError: a record or a turn lacks a required key.
    """
    instructions = ANNOTATION_INSTRUCTIONS if instructions_md is None else instructions_md
    parts = [f"<h1>Review: {len(records)} anonymized conversations</h1>"]
    if instructions:
        parts.append(f'<pre class="instructions">{html.escape(instructions)}</pre>')
    parts.extend(_record_html(index, record) for index, record in enumerate(records))
    return _page("Review", _REVIEW_CSS, "\n".join(parts), CONVERSATION_TEXT_MARK + "\n")
