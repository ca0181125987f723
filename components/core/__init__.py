"""The shared kernel every stage builds on: errors, params loading, JSONL I/O and atomic
writes, tracking, lineage, paths, the conversation record, the placeholder grammar, the
salt. It imports no stage."""
