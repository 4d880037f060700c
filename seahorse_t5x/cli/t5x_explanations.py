"""`seahorse-t5x t5x-explanations`: T5X predict-mode output of an explanation task -> the rows
`explain` writes.

The sibling of `t5x-scores` for the explainable metric: `t5x.infer` with
`gin/runs/infer_explain.gin` generates an error analysis per MetricInstruct row; this joins
each to its row (checked by the prompt) and writes `explain`'s rows
(`scoring/t5x_explanations.py`), score-file rows for `report` with `--score_file --metric`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from seahorse_t5x.cli import flags

HELP = "turn t5x/infer.py predict-mode output of an explanation task into explain's rows"
EXAMPLE = (
    "seahorse-t5x t5x-explanations --infer_output infer/metricinstruct-predict.jsonl-00000-of-"
    "00001 --input mi/test.jsonl --output explained.jsonl --score_file --metric "
    "explain_mt5_xxl_t5x"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from seahorse_t5x.scoring import t5x_explanations

    parser.add_argument(
        "--infer_output",
        action=flags.Location,
        required=True,
        nargs="+",
        help="the JSON Lines file infer.py wrote, or all its -NNNNN-of-NNNNN shard files",
    )
    parser.add_argument(
        "--input",
        action=flags.Location,
        required=True,
        help="the MetricInstruct file of the split inferred (METRIC_INSTRUCT_FILES[INFER_SPLIT] "
        "of the infer run), JSON array or JSON Lines",
    )
    parser.add_argument(
        "--task",
        default=None,
        help="the task inferred: metricinstruct, metricinstruct.<task type> "
        "(metricinstruct.summarization) or another registered set's; default: the one "
        "T5X's file name says (<task>-predict.jsonl-...)",
    )
    parser.add_argument(
        "--output",
        action=flags.Location,
        required=True,
        help="JSON Lines, dataset order: explain's rows (ids, `score`, `explanation`, "
        "`errors`, `parse_error`, `true_errors`); with --score_file, score-file rows",
    )
    flags.add_score_file(parser, "row, the true analysis' score as the label")
    parser.add_argument(
        "--metric",
        default=None,
        help="the metric name the score-file rows carry (required with --score_file)",
    )
    flags.add_rows_benchmark(parser, t5x_explanations.DEFAULT_BENCHMARK, "any name")
    parser.add_argument(
        "--join_by_position",
        action="store_true",
        help="accept output without inputs_pretokenized: join rows to the MetricInstruct "
        "file by position alone, unchecked (refused by default)",
    )


def write_explanations(
    infer_output: Sequence[str],
    input_path: str,
    output: str,
    *,
    task: str | None = None,
    metric: str | None = None,
    benchmark: str | None = None,
    join_by_position: bool = False,
) -> int:
    """Converts the infer output (`t5x_explanations.convert`) and writes the rows, after
    checking `output` can be written; prints what was written and the analyses that did
    not parse."""
    from seahorse_t5x import fileio
    from seahorse_t5x.scoring import t5x_explanations

    fileio.check_output_path(output, "file", flag="--output")
    rows, result = t5x_explanations.convert(
        infer_output,
        input_path,
        task=task,
        metric=metric,
        benchmark=benchmark or t5x_explanations.DEFAULT_BENCHMARK,
        join_by_position=join_by_position,
    )
    t5x_explanations.write_rows(output, rows)
    unchecked = result.rows - result.checked
    notes = [f"{result.unparsed} did not parse and have a null score"]
    if result.disagreeing:
        notes.append(
            f"{result.disagreeing} parsed with a first line that disagrees with their errors "
            "(scored by the errors, see parse_note)"
        )
    if result.dropped:
        notes.append(f"{result.dropped} bad rows of {input_path} skipped, as the task skips them")
    if unchecked:
        notes.append(f"{unchecked} joined by position unchecked")
    print(
        f"wrote {result.rows} explanations of {result.task} ({result.parsed} parsed, "
        f"{', '.join(notes)}) to {output}"
    )
    for problem in result.problems:
        print(f"  did not parse: {problem}")
    return 0


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.scoring import t5x_explanations

    metric, benchmark = flags.score_file_rows(
        args, "seahorse-t5x t5x-explanations", t5x_explanations.DEFAULT_BENCHMARK
    )
    return write_explanations(
        args.infer_output,
        args.input,
        args.output,
        task=args.task,
        metric=metric,
        benchmark=benchmark,
        join_by_position=args.join_by_position,
    )
