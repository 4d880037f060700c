"""`seahorse-t5x baselines`: score files for the majority-class and ROUGE-L baselines."""

from __future__ import annotations

import argparse
import collections
import pathlib

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.cli import flags
from seahorse_t5x.data import benchmarks, scorefiles, splits
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import tables
from seahorse_t5x.formats import vocab
from seahorse_t5x.scoring import baselines, rouge

HELP = "Write score files for the model-free baselines (majority class, ROUGE-L)."
EXAMPLE = (
    "seahorse-t5x baselines --data_dir prepared/ --split test --output_dir scores/baselines "
    "--vocab demo"
)


# The older flags that gave a benchmark's file, deprecated (hidden from --help; each prints
# a note): flag -> the benchmark it stands for (`--benchmark NAME --benchmark_path PATH`).
_BENCHMARK_FLAGS: dict[str, str] = {"mface": "mface", "true_dir": "true", "metal": "metal"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        action=flags.Location,
        help="folder of joined split files (`prepare` output): score SEAHORSE (needed "
        "unless --benchmark is given)",
    )
    parser.add_argument("--split", default="test", help="split to score (default: test)")
    parser.add_argument(
        "--train_split",
        default="train",
        help="split whose Yes rates are the majority scores (default: train)",
    )
    parser.add_argument(
        "--output_dir", action=flags.Location, required=True, help="where the score files go"
    )
    parser.add_argument(
        "--vocab",
        action=flags.Location,
        default=None,
        help=f"SentencePiece model for ROUGE-L tokens: a local .model path or `demo` "
        f"(default: ${constants.ENV_VOCAB})",
    )
    parser.add_argument(
        "--baselines",
        default=",".join(baselines.BASELINES),
        help="comma-separated subset of: " + ", ".join(baselines.BASELINES),
    )
    flags.add_benchmark(parser, repeatable=True)
    for old, name in _BENCHMARK_FLAGS.items():
        parser.add_argument(
            f"--{old}",
            metavar="PATH",
            action=flags.DeprecatedFlag,
            instead=f"--benchmark {name} --benchmark_path PATH",
            location=True,
            help=argparse.SUPPRESS,
        )
    parser.add_argument(
        "--mface_languages",
        choices=("all", "5lang"),
        default="all",
        help="mFACE languages: all 45, or the 5 SEAHORSE languages in XL-Sum",
    )
    parser.add_argument(
        "--xlsum_articles",
        action=flags.Location,
        default=None,
        help=f"XL-Sum test articles (JSON Lines) for METAL (default: ${benchmarks.ENV_XLSUM_ARTICLES})",
    )


def _chosen_baselines(text: str) -> list[str]:
    chosen = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in chosen if b not in baselines.BASELINES]
    if unknown or not chosen:
        raise errors.UserError(
            f"--baselines {text!r}: expected a comma-separated subset of {list(baselines.BASELINES)}"
        )
    return chosen


def _tokenizer(vocab_arg: str | None):
    path = vocab.resolve_vocabulary_path(vocab_arg)
    if "://" in path:
        raise errors.UserError(
            f"ROUGE-L needs a local SentencePiece model, got {path}: pass --vocab PATH (a copy "
            f"of mT5's sentencepiece.model for the paper's numbers) or --vocab demo"
        )
    vocab.check_model_file(path)
    return rouge.sentencepiece_tokenizer(path)


def _by_dataset(benchmark: str) -> bool:
    """Whether the benchmark's paper protocol reports by dataset (TRUE)."""
    declared = registry.find(benchmark)
    return declared is not None and declared.protocol.by == ("dataset",)


def _summary(rows: list[dict], metric: str) -> str:
    """`q:rho/roc` per question (per dataset where the benchmark reports by dataset), for
    the one-line report of a file."""
    from seahorse_t5x.evaluation import stats  # scipy: not needed for --help

    by_dataset = _by_dataset(rows[0]["benchmark"])

    def group(row: dict) -> object:
        return row["dataset"] if by_dataset else row["question"]

    parts = []
    for key in dict.fromkeys(group(r) for r in rows):
        chosen = [r for r in rows if group(r) == key]
        labels = [r.get("label_binary", r["label"]) for r in chosen]
        scores = [r["score"] for r in chosen]
        if metric == baselines.MAJORITY:
            result = baselines.majority_metrics(labels)
        else:
            result = stats.binary_metrics(labels, scores)
        if "label_binary" in chosen[0]:
            # Graded labels: ROC-AUC against the majority vote, Pearson against the mean.
            result["pearson"] = stats.graded_metrics([r["label"] for r in chosen], scores)[
                "pearson"
            ]
        parts.append(f"{key}:{tables.format_pair(result['pearson'], result['roc_auc'])}")
    return " ".join(parts)


def _write(path: pathlib.Path, rows: list[dict], metric: str, written: list[str]) -> None:
    count = scorefiles.write_score_file(path, rows)
    print(f"{path}: {count} rows, rho/ROC {_summary(rows, metric)}")
    written.append(str(path))


def _benchmark_sets(
    args: argparse.Namespace,
) -> list[tuple[str, benchmarks.ReadResult, str]]:
    """(benchmark name, read result, the flags that named it) for each benchmark given by
    `--benchmark NAME` (or a deprecated flag that stands for it)."""
    deprecated = [
        (name, getattr(args, flag), f"--{flag} {getattr(args, flag)}")
        for flag, name in _BENCHMARK_FLAGS.items()
        if getattr(args, flag, None)
    ]
    sets: list[tuple[str, benchmarks.ReadResult, str]] = []
    # (Each benchmark named once: `requested_benchmarks` refuses a second.)
    for name, path, given in flags.requested_benchmarks(args, also=deprecated):
        benchmark = registry.get(name)
        options = flags.benchmark_options(args, benchmark)
        try:
            results = benchmark.read_all(path, **options)
        except UnicodeDecodeError as e:
            raise errors.UserError(
                f"{given}: a file is not UTF-8 text ({e.reason} at byte {e.start}); "
                "expected UTF-8 CSV/JSON"
            ) from None
        sets.extend((name, result, given) for result in results)
    for _, result, _ in sets:
        if result.dropped:
            print(result.summary())
    return sets


def run(args: argparse.Namespace) -> int:
    chosen = _chosen_baselines(args.baselines)
    other_benchmarks = args.benchmark or any(getattr(args, f, None) for f in _BENCHMARK_FLAGS)
    if not args.data_dir and not other_benchmarks:
        raise errors.UserError(
            "nothing to score: give --data_dir (SEAHORSE) and/or --benchmark NAME "
            f"(one of {', '.join(registry.names())})"
        )
    fileio.check_output_path(args.output_dir, "directory", flag="--output_dir")
    test_rows: list[dict] = []
    if args.data_dir:
        data_dir = pathlib.Path(args.data_dir)
        test_path = splits.split_path(data_dir, args.split)
        test_rows = splits.read_rows(test_path)
        if not test_rows:
            raise errors.UserError(
                f"{test_path}: holds no rows (expected the rows of a `seahorse-t5x prepare` "
                "run that kept some)"
            )
    rates = None
    if baselines.MAJORITY in chosen and args.data_dir:
        rates = baselines.yes_rates(splits.read_rows(splits.split_path(data_dir, args.train_split)))
    tokenize = _tokenizer(args.vocab) if baselines.ROUGE_L in chosen else None
    if tokenize is None and other_benchmarks:
        raise errors.UserError(
            "--benchmark is scored by ROUGE-L only: add rouge_l to --baselines (the majority "
            "baseline is written for SEAHORSE only)"
        )
    sets = _benchmark_sets(args) if tokenize is not None else []
    kept: collections.Counter[str] = collections.Counter()
    given_by: dict[str, str] = {}
    for name, result, given in sets:
        kept[name] += len(result.examples)
        given_by[name] = given
    if empty := [name for name, count in kept.items() if not count]:
        # Checked before any file is written: an empty score file is no result.
        raise errors.UserError(
            f"{given_by[empty[0]]}: no {empty[0]} example kept, all dropped (see "
            "the lines above; expected rows with texts and labels)"
        )
    out = pathlib.Path(args.output_dir)
    written: list[str] = []

    if rates is not None:
        rows = baselines.majority_score_rows(test_rows, rates)
        _write(out / f"majority.seahorse.{args.split}.jsonl", rows, baselines.MAJORITY, written)
    if tokenize is not None and test_rows:
        scores = baselines.rouge_l_scores(
            ((r["article"], r["summary"]) for r in test_rows), tokenize
        )
        rows = baselines.seahorse_score_rows(test_rows, baselines.ROUGE_L, scores)
        _write(out / f"rouge_l.seahorse.{args.split}.jsonl", rows, baselines.ROUGE_L, written)

    # Benchmarks get ROUGE-L only: a constant majority score says nothing on graded labels,
    # and the paper's Tables 6 and 7 list no majority rows.
    if tokenize is not None:
        by_benchmark: dict[str, list[dict]] = {}
        for name, result, _ in sets:
            scores = baselines.rouge_l_scores(
                ((e["premise"], e["hypothesis"]) for e in result.examples), tokenize
            )
            by_benchmark.setdefault(name, []).extend(
                baselines.benchmark_score_rows(
                    result.examples,
                    baselines.ROUGE_L,
                    name,
                    scores,
                    registry.get(name).row_fields,
                )
            )
        for name, rows in by_benchmark.items():
            _write(out / f"rouge_l.{name}.jsonl", rows, baselines.ROUGE_L, written)
    # The readers' notes on their releases (TRUE's CSVs absent), once the files are written.
    for _, result, _ in sets:
        for note in result.notes:
            print(f"note: {note}")
    print(f"baselines: {len(written)} score files in {out}")
    return 0
