"""`seahorse-t5x explain`: a TIGERScore-style error analysis of each output in a file.

Flags -> `seahorse_t5x.explain_file` (the job: prompts, greedy decoding, parsing, resume;
`inference/explain.py`) -> the summary line.
"""

from __future__ import annotations

import argparse

from seahorse_t5x.cli import flags, inference_flags
from seahorse_t5x.inference import precision, settings

HELP = "generate an error analysis (location, aspect, explanation, severity, reduction) per row"
EXAMPLE = (
    "seahorse-t5x explain --checkpoint runs/explainer --input pairs.jsonl --output explained.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from seahorse_t5x.inference import explain

    parser.add_argument(
        "--checkpoint",
        action=flags.Location,
        required=True,
        help="an explanation model: HF directory, T5X checkpoint_N, orbax step or MODEL_DIR, "
        "or a Hub name ORG/NAME[@REVISION]",
    )
    parser.add_argument(
        "--input",
        action=flags.Location,
        required=True,
        help="JSON Lines: pairs with `article` and `summary` (optional `instruction`), or "
        "MetricInstruct rows (`instruction`, `input_context`, `hypo_output`, optional "
        "`errors` as the truth)",
    )
    parser.add_argument(
        "--output",
        action=flags.Location,
        required=True,
        help="JSON Lines, input order: each row's ids, `score` (minus the reductions; null "
        "when the text does not parse), `explanation`, `errors`, `parse_error`; with "
        "--score_file, score-file rows",
    )
    flags.add_score_file(
        parser, "row with a truth (`errors` or `label`), the truth's score as the label"
    )
    parser.add_argument(
        "--metric",
        default=None,
        help="the metric name the score-file rows carry (required with --score_file)",
    )
    flags.add_rows_benchmark(parser, explain.DEFAULT_BENCHMARK, "any name")
    parser.add_argument(
        "--vocab", action=flags.Location, default=None, help="SentencePiece model, or `demo`"
    )
    parser.add_argument(
        "--input_length",
        type=int,
        default=1024,
        help="prompt tokens (EOS included); the source is cut to fit, never the output "
        "evaluated; TIGERScore's context (default: %(default)s)",
    )
    parser.add_argument(
        "--max_output_length",
        type=int,
        default=512,
        help="the most tokens an analysis gets (default: %(default)s)",
    )
    parser.add_argument(
        "--batch_size",
        type=inference_flags.batch_size_flag,
        default=settings.AUTO_BATCH_SIZE,
        help="rows per batch at --input_length; auto: 8 (default: %(default)s)",
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=precision.CHOICES,
        help="the products' dtype; auto: bfloat16 on GPUs and TPUs, float32 on CPUs "
        "(default: %(default)s)",
    )
    inference_flags.add_mesh(
        parser,
        "device mesh, as `score` takes it: each batch's rows split N ways over data, the "
        "parameters on every device (M must be 1); the same output as one device "
        "(default: one device)",
    )
    parser.add_argument(
        "--num_beams",
        type=int,
        default=1,
        help="1: greedy decoding; more: beam search with that many beams a row, as HF "
        "`generate(num_beams=N)` (default: %(default)s)",
    )
    parser.add_argument(
        "--chunk_size", type=int, default=explain.DEFAULT_CHUNK_SIZE,
        help="rows generated and written at a time, the steps a resumed run continues "
        "from (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted run (same settings)"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace OUTPUT (with --resume too)"
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.inference import explain

    metric, benchmark = flags.score_file_rows(
        args, "seahorse-t5x explain", explain.DEFAULT_BENCHMARK
    )
    result = explain.explain_file(
        args.checkpoint,
        args.input,
        args.output,
        metric=metric,
        rows_benchmark=benchmark,
        vocab=args.vocab,
        input_length=args.input_length,
        max_output_length=args.max_output_length,
        batch_size=8 if args.batch_size == settings.AUTO_BATCH_SIZE else args.batch_size,
        dtype=args.dtype,
        mesh=args.mesh,
        num_beams=args.num_beams,
        chunk_size=args.chunk_size,
        resume=args.resume,
        overwrite=args.overwrite,
    )
    if result.already_complete:
        print(f"{result.output} is already complete; nothing to resume")
        return 0
    resumed = f", resumed after {result.resumed_after}" if result.resumed_after else ""
    disagreeing = (
        f" ({result.disagreeing} with a first line that disagrees with their errors: "
        "scored by the errors, see parse_note)"
        if result.disagreeing
        else ""
    )
    print(
        f"explained {result.rows} rows ({result.parsed} parsed{disagreeing}, {result.unparsed} "
        f"did not parse and have a null score, {result.cut_sources} sources cut to fit"
        f"{resumed}) in {result.seconds:.1f} s -> {result.output}"
    )
    for problem in result.problems:
        print(f"  did not parse: {problem}")
    return 0
