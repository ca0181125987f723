"""veiltune names info types as Google Cloud DLP does; this maps detector labels onto them."""

from __future__ import annotations

# Presidio's entity names (left) to DLP info types (right). Types with no DLP counterpart
# keep their Presidio name.
PRESIDIO_TO_DLP: dict[str, str] = {
    "PERSON": "PERSON_NAME",
    "ORGANIZATION": "ORGANIZATION_NAME",
    "LOCATION": "LOCATION",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD_NUMBER",
    "US_SSN": "US_SOCIAL_SECURITY_NUMBER",
    "IBAN_CODE": "IBAN_CODE",
    "IP_ADDRESS": "IP_ADDRESS",
    "URL": "URL",
    "DATE_TIME": "DATE",
    "NRP": "ETHNIC_GROUP",
    "US_PASSPORT": "PASSPORT",
    "US_DRIVER_LICENSE": "US_DRIVERS_LICENSE_NUMBER",
    "US_BANK_NUMBER": "FINANCIAL_ACCOUNT_NUMBER",
    "US_ITIN": "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER",
    "ABA_ROUTING_NUMBER": "AMERICAN_BANKERS_CC_ROUTING_NUMBER",
    "CA_SIN": "CANADA_SOCIAL_INSURANCE_NUMBER",
    "MEDICAL_LICENSE": "MEDICAL_RECORD_NUMBER",
    "CA_POSTAL_CODE": "CANADA_POSTAL_CODE",
    "MAC_ADDRESS": "MAC_ADDRESS",
    "UK_NHS": "UK_NATIONAL_HEALTH_SERVICE_NUMBER",
    "CRYPTO": "CRYPTO_WALLET_ADDRESS",
}

DLP_TO_PRESIDIO: dict[str, list[str]] = {}
for _presidio, _dlp in PRESIDIO_TO_DLP.items():
    DLP_TO_PRESIDIO.setdefault(_dlp, []).append(_presidio)


def to_dlp(presidio_entity: str) -> str:
    """The DLP info type for a Presidio entity name (unknown names pass through)."""
    return PRESIDIO_TO_DLP.get(presidio_entity, presidio_entity)


def to_presidio(info_type: str) -> str:
    """The Presidio entity name a recognizer reports ``info_type`` as (its own name when
    Presidio has none)."""
    return DLP_TO_PRESIDIO.get(info_type, [info_type])[0]


def presidio_entities_for(info_types: list[str]) -> list[str]:
    """Presidio entity names whose DLP type is among ``info_types`` (or equal to one)."""
    wanted = []
    for info_type in info_types:
        wanted.extend(DLP_TO_PRESIDIO.get(info_type, [info_type]))
    return sorted(set(wanted))
