"""The review stage: the human review sample and the scoring of reviewers' annotations.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.review.config import ReviewConfig
from components.review.page import ANNOTATION_INSTRUCTIONS, review_page_html

__all__ = ["ANNOTATION_INSTRUCTIONS", "ReviewConfig", "review_page_html"]
