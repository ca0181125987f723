"""The risk stage's params: the residual-risk score of each info type."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field

from components.core.config import params_section
from components.core.config import require as _require

RiskSource = Literal["auto", "ground_truth", "estimate"]
RISK_SOURCES = get_args(RiskSource)

# The method's residual-risk scores (0–5) for one missed item of each info type. An
# organization or product scores as a topic of conversation; its ``_SPEAKER`` variant, one
# that belongs to a speaker, identifies them.
DEFAULT_RISK_SCORES = {
    "PERSON_NAME": 5,
    "ORGANIZATION_NAME": 0,
    "ORGANIZATION_NAME_SPEAKER": 2,
    "PRODUCT_NAME": 0,
    "PRODUCT_NAME_SPEAKER": 2,
    "EMAIL_ADDRESS": 4,
    "PHONE_NUMBER": 4,
    "STREET_ADDRESS": 4,
    "LOCATION": 2,
    "US_STATE": 1,
    "CREDIT_CARD_NUMBER": 5,
    "US_SOCIAL_SECURITY_NUMBER": 5,
    "IBAN_CODE": 5,
    "IP_ADDRESS": 3,
    "URL": 2,
    "DOMAIN_NAME": 1,
    "DATE_OF_BIRTH": 3,
    "AGE": 1,
    "USER_NAME": 3,
    "GENERIC_ID": 4,
    "PASSPORT": 5,
    "MEDICAL_RECORD_NUMBER": 5,
    "VEHICLE_IDENTIFICATION_NUMBER": 5,
    "ROUTING_NUMBER": 3,
    "SWIFT_CODE": 1,
    "VAT_NUMBER": 2,
    "ICD10_CODE": 2,
    "MEDICAL_TERM": 1,
    "US_DRIVERS_LICENSE_NUMBER": 4,
    "FINANCIAL_ACCOUNT_NUMBER": 4,
    "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER": 5,
    "AMERICAN_BANKERS_CC_ROUTING_NUMBER": 3,
    "CANADA_SOCIAL_INSURANCE_NUMBER": 5,
    "MAC_ADDRESS": 2,
    "CRYPTO_WALLET_ADDRESS": 3,
}


@dataclass
@params_section("risk")
class RiskConfig:
    SECTION: ClassVar[str] = "risk"

    scores: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RISK_SCORES))
    default_score: Annotated[int, Field(ge=0, le=5)] = 3  # for an info type the table does not list
    # Which residual items the gate reads: ground truth when the corpus carries labelled PI
    # (auto), or always the automatic estimate, or insist on ground truth.
    source: RiskSource = "auto"

    def __post_init__(self) -> None:
        for info_type, score in self.scores.items():
            _require(
                isinstance(score, int) and 0 <= score <= 5,
                f"risk.scores.{info_type}",
                allowed="0..5",
            )
