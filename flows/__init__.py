"""Prefect orchestration of the veiltune pipeline (orchestration only: no stage logic here)."""
