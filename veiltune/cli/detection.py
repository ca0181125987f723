"""The detection tools beside the pipeline: ``detect``, ``evaluate-detection``,
``calibrate`` and ``train-ner``. The first two also run outside a checkout (their
``--params`` is optional)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from components.anonymize.commands import (
    calibrate,
    detect,
    evaluate_detection,
    format_false_positives,
    format_sweep,
    train_ner,
)
from components.anonymize.config import AnonymizeConfig
from components.anonymize.evaluation.datasets import KINDS, SPLITS, parse_data_spec
from components.anonymize.ner_training import TrainSettings
from components.core import paths
from components.stages import detection_context, stage_context
from veiltune.cli.options import (
    Commands,
    add_cluster,
    add_optional_params,
    add_params,
    anonymize_config,
)


def add_detect(commands: Commands) -> None:
    text = (
        'Detect personal information: for each {"id", "text"} record write {"id", "spans"} '
        "with character offsets (per-turn spans, tagged with turn, for records with turns)."
    )
    short = "Write the personal information spans found in each record of a JSONL file."
    sub = commands.add_parser("detect", help=short, description=text)
    add_optional_params(sub)
    sub.add_argument("--input", type=Path, required=True, help="JSONL records")
    sub.add_argument("--output", type=Path, required=True, help="JSONL spans to write")
    add_cluster(sub)
    sub.set_defaults(handler=_detect)


def _detect(args: argparse.Namespace) -> Any:
    context = detection_context(args.params)
    config = anonymize_config(context, args)
    return {"records": detect(config, context, input_path=args.input, output_path=args.output)}


def add_evaluate_detection(commands: Commands) -> None:
    text = (
        "Score detection on labelled data: character precision/recall (label-agnostic, "
        "neutral types excluded) and entity recall per type; logged to MLflow."
    )
    short = "Score detection against labelled data: precision and recall, recall per type."
    sub = commands.add_parser("evaluate-detection", help=short, description=text)
    add_optional_params(sub)
    sub.add_argument(
        "--dataset",
        required=True,
        choices=KINDS,
        help="format of the labelled data",
    )
    sub.add_argument("--path", type=Path, help="file of labelled data (not for embedded)")
    sub.add_argument("--limit", type=int, help="score only the first N texts")
    sub.add_argument(
        "--split",
        choices=SPLITS,
        default="all",
        help="presidio_research: the templates calibration uses, or those it never sees; "
        "wnut17: the sentences veiltune's NER trained on, or the quarter it never saw",
    )
    sub.add_argument(
        "--show-false-positives",
        type=int,
        default=0,
        metavar="N",
        help="print a seeded sample of N false positives with their context to stderr "
        "(private text: never written to the metrics file or MLflow)",
    )
    sub.add_argument(
        "--detectors",
        help="anonymize.detectors for this run, comma-separated (e.g. entities,lm_probability)",
    )
    sub.add_argument(
        "--sweep",
        metavar="KEY=V1,V2,...",
        help="score each value of lm_probability.p or vocab_threshold, detecting once, and "
        "print the precision-recall curve (docs/transforms.md)",
    )
    sub.add_argument(
        "--output",
        type=Path,
        default=paths.METRICS_DIR / "evaluate_detection.json",
        help="metrics file to write",
    )
    add_cluster(sub)
    sub.set_defaults(handler=_evaluate_detection)


def _evaluate_detection(args: argparse.Namespace) -> Any:
    """Its metrics as JSON; with --sweep the curve's table instead; false positives asked
    for go to stderr (private text)."""
    context = detection_context(args.params)
    metrics, samples = evaluate_detection(
        anonymize_config(context, args),
        context,
        dataset=args.dataset,
        path=args.path,
        limit=args.limit,
        output=args.output,
        split=args.split,
        show_false_positives=args.show_false_positives,
        sweep=args.sweep,
        detectors=args.detectors,
    )
    if samples:
        print(format_false_positives(samples), file=sys.stderr)
    if "sweep" in metrics:
        print(format_sweep(metrics["sweep"]))
        return 0
    return metrics


def add_calibrate(commands: Commands) -> None:
    text = (
        "Calibrate detection: choose each recognizer's score threshold for the recall, "
        "balanced and precision operating points on labelled data (presidio_research: its "
        "tuning templates only) and write them to the calibration policy file."
    )
    short = "Choose each recognizer's score threshold on labelled data; write the policy file."
    sub = commands.add_parser("calibrate", help=short, description=text)
    add_params(sub)
    sub.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="KIND[=PATH]",
        help="labelled data: wnut17=FILE, presidio_research=FILE, jsonl=FILE or embedded; "
        "speech: before a kind reads its texts as speech recognition writes them "
        "(speech:presidio_research=FILE); repeat for several",
    )
    sub.add_argument("--limit", type=int, help="use only the first N texts of each")
    sub.add_argument(
        "--output",
        type=Path,
        default=Path("veiltune/policy/calibration.yaml"),
        help="file to write",
    )
    sub.set_defaults(handler=_calibrate)


def _calibrate(args: argparse.Namespace) -> Any:
    context = stage_context(args.params)
    data = [parse_data_spec(spec) for spec in args.data]
    return calibrate(
        context.config(AnonymizeConfig), context, data=data, output=args.output, limit=args.limit
    )


def add_train_ner(commands: Commands) -> None:
    text = (
        "Fine-tune an encoder (a Hugging Face folder) into a token classifier of names, "
        "places, organizations and street addresses on labelled data, and write it with its "
        "ONNX (onnx/model.onnx), which anonymize.ner.model loads by path. "
        "presidio_research and wnut17 give their tuning side only: the held-out side "
        "measures the result (docs/detection.md)."
    )
    short = "Train a transformer NER for anonymize.ner.model on labelled data."
    sub = commands.add_parser("train-ner", help=short, description=text)
    sub.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="KIND[=PATH]",
        help="labelled data, as calibrate reads it (speech: for its speech-like view); "
        "embedded: generated calls evaluation never reads; repeat for several",
    )
    sub.add_argument("--base", type=Path, required=True, help="the encoder folder to fine-tune")
    sub.add_argument("--output", type=Path, required=True, help="the model folder to write")
    defaults = TrainSettings()
    sub.add_argument("--epochs", type=int, default=defaults.epochs)
    sub.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    sub.add_argument("--batch-size", type=int, default=defaults.batch_size)
    sub.add_argument("--seed", type=int, default=defaults.seed)
    sub.add_argument(
        "--embedded-conversations", type=int, default=200, help="generated calls (embedded)"
    )
    sub.set_defaults(handler=_train_ner)


def _train_ner(args: argparse.Namespace) -> Any:
    settings = TrainSettings(
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
    )
    data = [parse_data_spec(spec) for spec in args.data]
    return train_ner(
        data,
        args.base,
        output=args.output,
        settings=settings,
        embedded_conversations=args.embedded_conversations,
    )
