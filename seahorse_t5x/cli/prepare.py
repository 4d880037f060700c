"""`seahorse-t5x prepare`: SEAHORSE TSVs + GEM articles -> joined split files + report."""

from __future__ import annotations

import argparse

from seahorse_t5x.cli import flags

HELP = "join the SEAHORSE ratings with their GEM articles into train/validation/test JSONL"
EXAMPLE = (
    "seahorse-t5x prepare --seahorse_dir ~/data/seahorse --articles ~/data/gem/xlsum "
    "--articles ~/data/gem/wiki_lingua.jsonl --output_dir ~/data/seahorse_prepared"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seahorse_dir",
        action=flags.Location,
        required=True,
        help="folder with train.tsv, validation.tsv, test.tsv (or its parent with seahorse_data/)",
    )
    parser.add_argument(
        "--articles",
        action="append",
        required=True,
        metavar="PATH",
        help="article source, repeatable: a GEM .parquet or {gem_id, article} .jsonl file, a "
        "folder of them, or hf:DATASET:CONFIG[:SPLIT] (needs the optional `datasets` package)",
    )
    parser.add_argument(
        "--output_dir", action=flags.Location, required=True, help="where {split}.jsonl are written"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first unusable row (file:line, field, what was expected) instead of "
        "dropping and counting it",
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.data import prepare

    prepare.prepare(args.seahorse_dir, args.articles, args.output_dir, strict=args.strict)
    return 0
