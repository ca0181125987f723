"""Leakage audits: attacks on a trained model that show whether it leaks personal information."""
