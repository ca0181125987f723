"""Anonymization: detect personal information and replace it with numbered placeholders."""
