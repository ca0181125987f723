"""The test-suite benchmark reads pytest's own report: its counts and its slowest tests."""

from __future__ import annotations

from benchmarks.suite import parse_report, suite_command


def test_the_suite_runs_as_the_makefile_runs_it() -> None:
    command = suite_command(2)
    assert command[1:3] == ["-m", "pytest"] and command[-1] == "tests"
    assert command[3:8] == ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]


def test_counts_and_slowest_come_from_pytests_report() -> None:
    output = "\n".join(
        [
            "....s..",
            "============ slowest 25 durations ============",
            "139.45s setup    tests/test_pipeline_e2e.py::test_every_stage",
            "35.56s call     tests/train/test_deepspeed.py::test_zero[zero2.json-2]",
            "=========== short test summary info ===========",
            "FAILED tests/flows/test_a.py::test_b - AssertionError: 1 != 2",
            "ERROR tests/team/test_c.py::test_d - TimeoutError",
            "1634 passed, 1 failed, 2 skipped, 1 error, 37 warnings in 559.43s (0:09:19)",
        ]
    )
    report = parse_report(output)
    assert report["counts"] == {"passed": 1634, "failed": 1, "skipped": 2, "errors": 1}
    assert report["failed"] == ["tests/flows/test_a.py::test_b", "tests/team/test_c.py::test_d"]
    assert report["slowest"][0] == {
        "seconds": 139.45,
        "phase": "setup",
        "test": "tests/test_pipeline_e2e.py::test_every_stage",
    }
    assert report["slowest"][1]["test"].endswith("[zero2.json-2]")
    assert parse_report("") == {"counts": {}, "failed": [], "slowest": []}
