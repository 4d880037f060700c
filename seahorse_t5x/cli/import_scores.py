"""`seahorse-t5x import-scores`: an external metric's output, or METAL's own LLM scores,
as per-example score files for `report`.

`--t5x_infer` (T5X score-mode output) is deprecated: it prints a note and runs what
`seahorse-t5x t5x-scores` runs (`cli.t5x_scores.write_score_file`).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from seahorse_t5x import constants
from seahorse_t5x.cli import flags

# The command that converts T5X score-mode output (`--t5x_infer` runs it).
T5X_SCORES = "seahorse-t5x t5x-scores"
HELP = "turn an external metric's per-item scores (or METAL's LLM scores) into score files"
EXAMPLE = (
    "seahorse-t5x import-scores --external tigerscore.json --metric tigerscore "
    "--benchmark seahorse --data_dir prepared --split test --key article,summary "
    "--output scores/tigerscore.seahorse.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from seahorse_t5x.data.benchmarks import registry

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--external",
        action=flags.Location,
        metavar="FILE",
        help="the external metric's output: .json (a list of objects, e.g. TIGERScore's "
        "results with their inputs, or an object keyed by gem_id), .jsonl, .csv or .tsv",
    )
    # Its older name, which `report` uses for this project's own score files.
    flags.add_alias(source, "--scores", "--external")
    source.add_argument(
        "--metal_llm",
        action=flags.Location,
        metavar="METAL_dataset.json",
        help="write METAL's LLM_Scores_Simple/Detailed (GPT-4, GPT-3.5-Turbo, PaLM2) as one "
        "score file per evaluator and prompt style into --output_dir",
    )
    source.add_argument(
        "--t5x_infer",
        nargs="+",
        metavar="FILE",
        action=flags.DeprecatedFlag,
        instead=T5X_SCORES,
        location=True,
        help=f"deprecated: use `{T5X_SCORES}`, which this runs: t5x/infer.py score-mode "
        "output (all its shard files), with --task, --data_dir and --split",
    )
    # Flags of the deprecated --t5x_infer only, hidden with it.
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument(
        "--join_by_position",
        action="store_true",
        help=argparse.SUPPRESS,
    )
    # Not `required`: each source names its own (checked in `run`).
    parser.add_argument(
        "--output",
        action=flags.Location,
        metavar="FILE",
        help="the score file to write, JSON Lines (required with --external)",
    )
    parser.add_argument(
        "--output_dir",
        action=flags.Location,
        metavar="DIR",
        help="the folder --metal_llm writes its score files into (required with --metal_llm)",
    )
    parser.add_argument("--metric", help="metric name the rows carry (with --external)")
    parser.add_argument(
        "--benchmark",
        action=flags.Location,
        default=constants.SEAHORSE_BENCHMARK,
        choices=registry.choices(),
        metavar="NAME",
        help=f"whose labels the scores are joined to: {', '.join(registry.choices())}",
    )
    parser.add_argument(
        "--key",
        default=None,
        help="comma-separated join fields from gem_id, system, article, summary, dataset "
        "(external files may also name them id, model, input_context/source/premise/document, "
        "hypo_output/hypothesis/generated_text, or as the benchmark's files do: FRANK's hash "
        "and model_name, SummEval's id and model_id, LLM-AggreFact's doc and claim) (default: "
        "the benchmark's natural key; gem_id,system for seahorse)",
    )
    parser.add_argument("--score_field", default="score", help="the score's field")
    parser.add_argument(
        "--lower_is_better", action="store_true", help="negate the scores (e.g. error counts)"
    )
    parser.add_argument(
        "--data_dir", action=flags.Location, help="seahorse: the `prepare` output folder"
    )
    parser.add_argument("--split", default="test", help="seahorse: the split")
    parser.add_argument(
        "--questions",
        default=None,
        metavar="4",
        help="seahorse (required): the questions the scores answer, comma-separated; each "
        "listed question's labels are joined to the same score (1,2,3,4,5,6 for a metric "
        "of overall quality)",
    )
    parser.add_argument(
        "--benchmark_path",
        action=flags.Location,
        help="the benchmark's file or folder as released, e.g. metal: METAL_dataset.json; "
        "mface: the CSV; true: the folder of CSVs; frank: its data/ folder (default: its "
        "environment variable, e.g. $SEAHORSE_METAL_PATH; docs/benchmarks.md)",
    )
    parser.add_argument(
        "--articles",
        action=flags.Location,
        metavar="PATH",
        help="summeval: CNN/DM articles (JSON Lines of id and text) for the unpaired "
        "model_annotations.aligned.jsonl",
    )
    parser.add_argument(
        "--xlsum_articles",
        action=flags.Location,
        help="metal: XL-Sum test articles (JSON Lines), to join on article",
    )


def _questions(text: str | None, benchmark: str, external: str) -> tuple[int, ...]:
    from seahorse_t5x import constants, errors

    if text is None:
        if benchmark != constants.SEAHORSE_BENCHMARK:
            return constants.QUESTIONS  # unused: the other benchmarks carry their dimensions
        raise errors.UserError(
            f"{external} holds one score per item: name the SEAHORSE question it answers with "
            "--questions N (e.g. --questions 4); --questions 1,2,3,4,5,6 joins the same score "
            "to all six"
        )

    from seahorse_t5x import arguments
    from seahorse_t5x.cli import inference_flags

    with inference_flags.flag_names(["questions"]):
        return arguments.parse_questions(text)


def _metal_llm(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors, fileio
    from seahorse_t5x.data import scorefiles
    from seahorse_t5x.scoring import import_scores

    folder = args.output_dir
    if args.output is not None:
        if folder is not None:
            raise errors.UserError(
                "--metal_llm writes a folder of score files: give --output_dir DIR only"
            )
        # Its older spelling: --output is a file wherever else it is given.
        flags.note_deprecated(
            "seahorse-t5x import-scores", "--output with --metal_llm", "--output_dir"
        )
        folder = args.output
    if folder is None:
        raise errors.UserError("--metal_llm writes a folder of score files: give --output_dir DIR")
    fileio.check_output_path(folder, "directory", "--output_dir")
    result = import_scores.metal_llm_scores(args.metal_llm)
    out = pathlib.Path(folder)
    by_metric: dict[str, list[dict]] = {}
    for row in result.examples:
        by_metric.setdefault(row["metric"], []).append(row)
    for metric, rows in sorted(by_metric.items()):
        path = out / f"{metric}.metal.jsonl"
        scorefiles.write_score_file(path, rows)
        print(f"{path}: {len(rows)} rows")
    if result.dropped:
        print(result.summary(), file=sys.stderr)
    print(
        f"import-scores: {len(result.examples)} METAL LLM scores in {len(by_metric)} files in "
        f"{out} ({len(result.dropped)} dropped)"
    )
    return 0


def _t5x_infer(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors
    from seahorse_t5x.cli import t5x_scores

    if not args.task or not args.data_dir:
        raise errors.UserError("--t5x_infer needs --task (the task inferred) and --data_dir")
    return t5x_scores.write_score_file(
        args.t5x_infer,
        args.task,
        args.data_dir,
        args.split,
        args.output,
        args.metric.strip(),
        join_by_position=args.join_by_position,
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors, fileio
    from seahorse_t5x.data import scorefiles
    from seahorse_t5x.scoring import import_scores

    if args.metal_llm:
        return _metal_llm(args)
    if args.output_dir is not None:
        raise errors.UserError(
            "--output_dir is the folder of --metal_llm: give --output FILE for the score file"
        )
    if args.output is None:
        raise errors.UserError("give --output FILE: the score file to write")
    if not args.metric or not args.metric.strip():
        raise errors.UserError("--metric must name the imported metric (e.g. tigerscore)")
    if args.t5x_infer:
        return _t5x_infer(args)
    if args.join_by_position:
        raise errors.UserError(
            "--join_by_position applies to --t5x_infer only; --external joins by --key"
        )
    key = (
        import_scores.parse_key(args.key)
        if args.key is not None
        else import_scores.default_key(args.benchmark)
    )
    fileio.check_output_path(args.output, "file", "--output")
    items, dropped, notes = import_scores.benchmark_items(
        args.benchmark,
        data_dir=args.data_dir,
        split=args.split,
        questions=_questions(args.questions, args.benchmark, args.external),
        path=args.benchmark_path,
        xlsum_articles=args.xlsum_articles,
        options={"articles": args.articles} if args.articles else None,
    )
    external = import_scores.read_external_scores(
        args.external, key, args.score_field, import_scores.key_aliases(args.benchmark)
    )
    rows, report = import_scores.join_scores(
        external, items, key, args.metric.strip(), args.benchmark, negate=args.lower_is_better
    )
    report.benchmark_dropped = len(dropped)
    report.benchmark_notes = notes
    output = pathlib.Path(args.output)
    written = scorefiles.write_score_file(output, rows)
    report_path = output.with_name(output.name.removesuffix(".jsonl") + ".join.json")
    summary = {"scores": str(args.external), "key": list(key), **report.to_dict()}
    fileio.atomic_write_text(report_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    print(report.summary())
    for kind, shown in report.examples.items():
        print(f"  {kind}: {'; '.join(shown)}")
    for note in notes:
        print(f"  note: {note}")
    print(f"import-scores: wrote {written} rows to {output} (join report: {report_path})")
    return 0
