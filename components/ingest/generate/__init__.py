"""A deterministic corpus of business calls, written the way a speech-to-text engine writes them.

Conversations are drawn from the dialogue scripts (``scripts``, read by ``templates``) and
the vocabularies (``vocabulary``); ``conversations`` builds their turns and exact ``pi``
offsets, ``values`` makes up what they mention and ``asr`` writes each mention. How much of
the text looks like raw ASR output (lowercase stretches, spelled letters, digits said as
words, fillers) is set by ``ASR_NOISE_POLICY`` (``policy``). ``sensitive`` writes calls in
the sensitivity taxonomy's settings (``sensitive_scripts``) with their facts labelled.
"""

from components.ingest.generate.conversations import generate_corpus
from components.ingest.generate.policy import ASR_NOISE_POLICY
from components.ingest.generate.sensitive import generate_sensitive_corpus

__all__ = ["ASR_NOISE_POLICY", "generate_corpus", "generate_sensitive_corpus"]
