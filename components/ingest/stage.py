"""The ingest stage: validate a user corpus or generate the embedded one, plant the
canaries, split train/held-out, and write the raw corpus, its salt and the PI inventory."""

from __future__ import annotations

import os

from components.core import paths
from components.core.atomic import PRIVATE, private_folder
from components.core.errors import ParamsError
from components.core.jsonio import write_json_atomic, write_jsonl_atomic, write_text_atomic
from components.core.salt import ingest_salt
from components.core.stage import Metrics, StageContext
from components.ingest.audit_canaries import draw_audit_canaries
from components.ingest.canaries import plant_canaries
from components.ingest.config import IngestConfig
from components.ingest.pi_inventory import inventory_entries
from components.ingest.pseudonyms import IdPseudonyms
from components.ingest.sources import corpus_metrics, ingest_sources, split_ids


def run(config: IngestConfig, context: StageContext) -> Metrics:
    main, dialogsum = ingest_sources(config, context.base_dir)  # validated before any write
    conversations = [*main, *dialogsum]
    # The split and the canaries' hosts are drawn on the original ids: the same whatever
    # the salt, so a new ingest renames the user's conversations and changes nothing else.
    splits = split_ids([c.id for c in conversations], config.heldout_fraction, seed=config.seed)
    _require_heldout(splits, config.heldout_fraction)
    try:
        conversations, canaries = plant_canaries(
            conversations,
            splits["train"],
            entity_types=config.canary_types,
            repetitions=config.canary_repetitions,
            seed=config.seed,
        )
    except ValueError as exc:
        raise ParamsError(f"params: ingest.canary_repetitions: {exc}") from exc
    salt = ingest_salt(os.environ)  # fresh, or the team's: checked before anything is written
    # A user's ids may be PI (an e-mail address as a CRM key): nothing after ingest sees them.
    user_ids = [c.id for c in main] if config.corpus_path else []
    pseudonyms = IdPseudonyms.of(user_ids, salt, corpus_name=str(config.corpus_path))
    conversations = pseudonyms.conversations(conversations)
    splits, canaries = pseudonyms.splits(splits), pseudonyms.canaries(canaries)
    out = context.output
    with context.mlflow_run():
        # Raw text, the key and the inventory are readable by their owner only, whatever
        # the umask: 0700 folders, 0600 files.
        for folder in (out(paths.RAW_DIR), out(paths.INVENTORY).parent):
            private_folder(folder)
        write_jsonl_atomic(
            out(paths.RAW_CORPUS), (c.to_record() for c in conversations), mode=PRIVATE
        )
        write_jsonl_atomic(out(paths.CANARIES), (c.to_record() for c in canaries), mode=PRIVATE)
        write_text_atomic(out(paths.SALT), salt + "\n", mode=PRIVATE)
        audit_canaries = draw_audit_canaries(config.audit_canaries, salt)
        write_jsonl_atomic(
            out(paths.AUDIT_CANARIES), (c.to_record() for c in audit_canaries), mode=PRIVATE
        )
        # The one way back from a pseudonym (empty for veiltune's own corpora).
        write_jsonl_atomic(out(paths.ID_PSEUDONYMS), pseudonyms.records(), mode=PRIVATE)
        entries = inventory_entries(conversations, salt)
        write_jsonl_atomic(out(paths.INVENTORY), (e.to_record() for e in entries), mode=PRIVATE)
        write_json_atomic(out(paths.SPLITS), splits, mode=PRIVATE)
        metrics = {
            **corpus_metrics(conversations, splits),
            "n_canaries": len(canaries),
            "n_audit_canaries": len(audit_canaries),
        }
        context.record(metrics)
    return metrics


def _require_heldout(splits: dict[str, list[str]], fraction: float) -> None:
    """Evaluate and the audits' non-members need a held-out conversation; a small corpus or
    fraction can leave none (the split is by a seeded hash, not a count)."""
    if not splits["heldout"]:
        n = len(splits["train"])
        raise ParamsError(
            f"params: bad value for 'ingest.heldout_fraction': {fraction:g} of {n} "
            f"conversation{'s' * (n != 1)} leaves no held-out conversation to evaluate on; "
            "raise it, or ingest more conversations"
        )


def summary(metrics: Metrics) -> str:
    """The line ``veiltune ingest`` prints: the corpus and its split."""
    return (
        f"{metrics['n_conversations']} conversations ({metrics['n_train']} train, "
        f"{metrics['n_heldout']} held out), {metrics['n_pi_mentions']} PI mentions, "
        f"{metrics['n_canaries']} canaries"
    )
