"""Benchmarks (make bench): speed measured against a baseline in the same run; not tests."""
