"""`seahorse-t5x report`: meta-evaluation tables and plots from score files or a prepared dataset."""

from __future__ import annotations

import argparse

from seahorse_t5x import errors
from seahorse_t5x.cli import flags

HELP = "Tables (Markdown, LaTeX, JSON) and plots from score files and/or a prepared dataset."
EXAMPLE = (
    "seahorse-t5x report --scores out/scores/rougeL.jsonl out/scores/q_model.jsonl "
    "--output_dir out/report --by language,dataset,system --bootstrap 1000 --seed 0"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scores",
        action=flags.Location,
        nargs="+",
        default=[],
        metavar="FILE",
        help="this project's per-example score files (JSON Lines: metric, benchmark, question,"
        " label, score, ...); a folder stands for the *.jsonl files in it and its sub-folders "
        "(an external metric's output goes through `import-scores --external` first)",
    )
    parser.add_argument(
        "--data_dir",
        action=flags.Location,
        metavar="DIR",
        help="a `prepare` output folder: Tables 1, 3, 8 and the label-correlation heatmap "
        "(default: none, score files only)",
    )
    flags.add_alias(parser, "--dataset", "--data_dir")
    parser.add_argument(
        "--duplicates",
        action=flags.Location,
        metavar="PATH",
        help="with --data_dir: SEAHORSE duplicates TSV (or folder of them) for rater agreement "
        "(default: no agreement table)",
    )
    parser.add_argument(
        "--output_dir", action=flags.Location, required=True, metavar="DIR", help="where to write"
    )
    parser.add_argument(
        "--by",
        default="language,dataset,system",
        help="comma-separated slice fields for breakdown tables ('' for none)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples for CIs and paired tests (0: none)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling")
    parser.add_argument(
        "--baseline",
        metavar="METRIC",
        help="compare every metric with this one only (default: every pair of metrics)",
    )
    parser.add_argument(
        "--teacher",
        metavar="METRIC",
        help="also compare every other metric (a student) with this one row by row: Pearson "
        "and Spearman with its scores, both against the labels, paired tests "
        "(teacher_agreement.md/.tex; default: none)",
    )
    parser.add_argument(
        "--disagreements",
        type=int,
        default=5,
        metavar="K",
        help="for an explainable metric's rows (`explain --score_file`): the K items per metric "
        "and question where its score and the label disagree most by rank, with their "
        "explanations, in disagreements.md (0: none)",
    )
    parser.add_argument("--no_plots", action="store_true", help="write tables only")
    from seahorse_t5x.data.benchmarks import registry

    choices = registry.choices()
    parser.add_argument(
        "--only_benchmark",
        action=flags.LocationList,
        choices=choices,
        metavar="NAME",
        help="report only this benchmark's score rows (repeatable; default: every benchmark "
        f"the score files hold): {', '.join(choices)}",
    )
    # Its older spelling: elsewhere --benchmark names a benchmark whose items are read.
    flags.add_alias(parser, "--benchmark", "--only_benchmark")
    parser.add_argument(
        "--benchmark_path",
        action="append",
        metavar="PATH",
        help="with --only_benchmark: the benchmark's file or folder as released (one per "
        "--only_benchmark, in the same order), read to say how many of its items each metric "
        "scored",
    )
    parser.add_argument(
        "--drop_duplicates",
        action="store_true",
        help="keep the first row of an item scored twice for the same metric, benchmark and "
        "question (an item: gem_id + system, + summary where present) and count the others "
        "in report.json, instead of stopping with an error",
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.evaluation import report

    if args.bootstrap < 0:
        raise errors.UserError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if args.disagreements < 0:
        raise errors.UserError(f"--disagreements must be >= 0, got {args.disagreements}")
    if args.duplicates and not args.data_dir:
        raise errors.UserError(
            "--duplicates needs --data_dir (rater agreement is a table of the dataset's)"
        )
    by = tuple(field.strip() for field in args.by.split(",") if field.strip())
    chosen = flags.requested_benchmarks(args, flag="--only_benchmark")
    settings = report.ReportSettings(
        by=by,
        n_resamples=args.bootstrap,
        seed=args.seed,
        baseline=args.baseline,
        teacher=args.teacher,
        disagreements=args.disagreements,
        plots=not args.no_plots,
        drop_duplicates=args.drop_duplicates,
        benchmarks=tuple(name for name, _, _ in chosen),
        benchmark_paths={name: path for name, path, _ in chosen if path},
    )
    result = report.write_report(
        args.output_dir,
        score_paths=args.scores,
        dataset_dir=args.data_dir,
        settings=settings,
        duplicates_path=args.duplicates,
    )
    print(result["summary"])
    return 0
