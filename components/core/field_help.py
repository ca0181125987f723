"""The help of a config dataclass's fields: the comment the code gives each field, read from
its source (a field's comment is not kept at run time). The params reference of the docs and
``veiltune params --schema`` describe each key with it."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize


def field_comments(config: type) -> dict[str, str]:
    """Each field's comment: the comment lines right above it, then the one beside it
    (``""`` for a field without one)."""
    source = inspect.getsource(config)
    lines = source.splitlines()
    by_line = _comments_by_line(source)
    (node,) = (n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    found: dict[str, str] = {}
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        above: list[str] = []
        line = statement.lineno - 1  # 1-based line numbers: the line above the field
        while line >= 1 and lines[line - 1].strip().startswith("#"):
            above.insert(0, by_line[line])
            line -= 1
        end = statement.end_lineno or statement.lineno
        beside = [by_line[n] for n in range(statement.lineno, end + 1) if n in by_line]
        found[statement.target.id] = " ".join([*above, *beside]).strip()
    return found


def _comments_by_line(source: str) -> dict[int, str]:
    """Comment text (without ``#``) by its 1-based line in ``source``."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokens
        if token.type == tokenize.COMMENT
    }
