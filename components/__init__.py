"""Stage logic of veiltune: plain typed functions, no orchestration (never imports Prefect)."""
