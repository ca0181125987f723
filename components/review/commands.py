"""The other half of the review loop: score reviewers' annotations next to the estimate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from components.core import paths
from components.core.jsonio import write_json_atomic
from components.core.salt import read_salt
from components.core.stage import Metrics, check_paths
from components.review.sample import annotated_summary, count_by_type, read_annotations
from components.risk import RiskConfig, RiskPolicy, estimate_items, summarize_scores


def review_import(risk: RiskConfig, input_path: Path, *, output: Path) -> Metrics:
    """Score reviewers' annotations (scored by ``risk``'s table); report them next to the
    automatic estimate. Leaked text is hashed with the corpus's salt when there is one."""
    check_paths([input_path], [output])
    policy = RiskPolicy(risk.scores, risk.default_score)
    salt = read_salt(paths.SALT) if paths.SALT.is_file() else ""
    reviewed = read_annotations(input_path, policy, salt=salt)
    estimated = {
        r.conversation.id: estimate_items(r.conversation, policy, salt=salt) for r in reviewed
    }
    rows = annotated_summary(reviewed, estimated)
    frame = pd.DataFrame(rows)
    report = {
        "conversations": len(rows),
        "annotated": summarize_scores(frame["annotated_score"]),
        "estimated": summarize_scores(frame["estimated_score"]),
        "annotated_items_by_type": count_by_type(i for r in reviewed for i in r.items),
        "rows": rows,
    }
    write_json_atomic(output, report)
    return {k: v for k, v in report.items() if k != "rows"} | {"output": str(output)}
