"""How full T5X's packed training rows are, measured through SeqIO's own feature converter;
fills PERFORMANCE.md's "Packing of T5X's training rows" table.

`t5x.train` packs training examples with `seqio.EncDecFeatureConverter(pack=True)` at the
gin's TASK_FEATURE_LENGTHS. SeqIO packs in dataset order and closes a row as soon as the
next example does not fit in the inputs *or* the targets, so both lengths matter: each
SEAHORSE example needs 2 target slots ('1' or '0', then EOS).

For every distinct TASK_FEATURE_LENGTHS of the package gins (default: experiments/*.gin and
local/*.gin, the explainers' aside) this script runs the converter on

- the demo data, through the real task (`--data_dir`, `--task`; SEAHORSE_VOCAB=demo), and
- a synthetic SEAHORSE-like length mix (`--synthetic_examples`; see SOURCE_MIX below),

and prints, per source and lengths: packed rows, examples per row, the share of real input
tokens (non-padding encoder tokens / rows x input length), the share of real target tokens,
and how many rows were closed because the targets were full.

Usage:
    SEAHORSE_VOCAB=demo python scripts/packing_report.py --data_dir /tmp/demo/prepared
    python scripts/packing_report.py --synthetic_only --format markdown
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import itertools
import json
import math
import os
import pathlib
import re
import sys
from collections.abc import Iterable, Iterator

import numpy as np

# The package's gin folder (`seahorse-t5x gin-path`); patterns and names are relative to it.
GIN_ROOT = pathlib.Path(__file__).resolve().parents[1] / "seahorse_t5x" / "gin"
DEFAULT_GINS = ("experiments/*.gin", "local/*.gin")
# The explainers' gins train error analyses (hundreds of target tokens an example), not
# SEAHORSE's labels: their packing is not what this report measures.
EXPLAINER_GINS = ("experiments/explain_*.gin", "local/explain_*.gin")
TRAINING_RUN_GINS = ("runs/finetune.gin", "local/train.gin")
LENGTHS_RE = re.compile(r"^TASK_FEATURE_LENGTHS\s*=\s*(\{[^}]*\})", re.MULTILINE)

# The synthetic SEAHORSE-like mix: one entry per (dataset, language) of the SEAHORSE paper's
# Table 1 (annotations, the mix weights). The bulk of each article-length distribution
# comes from the source datasets' published mean article lengths in words:
#   XSum: 431 words (Narayan et al. 2018, Table 1; GEM xsum data card);
#   MLSum: de 570.6, es 800.5 words (Scialom et al. 2020, Table 1; GEM mlsum data card);
#   XL-Sum: BBC Mundo (es) validation articles average 4,641 characters (std 2,175; the
#     Hugging Face statistics of csebuetnlp/xlsum), about 770 words at 6 characters a
#     word; the other BBC services are taken to be as long;
#   WikiLingua: 391 words per article (Ladhak et al. 2020, English).
# Words become mT5 SentencePiece tokens at an assumed per-language rate (TOKENS_PER_WORD).
# Summaries add about 25 words; "premise: ", " hypothesis: " and EOS add 6 tokens.
# The shape is log-normal with one spread for all, chosen so that 5% of the inputs exceed
# 2048 tokens: the paper's plain cut at 2048 cost 4.7% of test pairs part of their summary.
SOURCE_MIX = (
    # dataset, language, annotations (Table 1), mean article words
    ("mlsum", "de", 7506, 570.6),
    ("wikilingua", "de", 7085, 391.0),
    ("xsum", "en", 6651, 431.0),
    ("xlsum", "en", 7884, 770.0),
    ("wikilingua", "en", 7804, 391.0),
    ("xlsum", "es", 4890, 770.0),
    ("mlsum", "es", 4857, 800.5),
    ("wikilingua", "es", 5002, 391.0),
    ("xlsum", "ru", 7254, 770.0),
    ("wikilingua", "ru", 7288, 391.0),
    ("xlsum", "tr", 10627, 770.0),
    ("wikilingua", "tr", 4791, 391.0),
    ("xlsum", "vi", 7522, 770.0),
    ("wikilingua", "vi", 7484, 391.0),
)
TOKENS_PER_WORD = {"de": 1.6, "en": 1.35, "es": 1.45, "ru": 1.7, "tr": 1.8, "vi": 1.25}
SUMMARY_WORDS = 25
FIXED_TOKENS = 6
TAIL_ANCHOR = {"length": 2048, "share_over": 0.05}


@dataclasses.dataclass
class PackingStats:
    """What one pass of the converter produced."""

    rows: int
    examples: int
    input_length: int
    target_length: int
    input_tokens: int
    target_tokens: int
    target_full_rows: int

    @property
    def examples_per_row(self) -> float:
        return self.examples / self.rows

    @property
    def input_share(self) -> float:
        return self.input_tokens / (self.rows * self.input_length)

    @property
    def target_share(self) -> float:
        return self.target_tokens / (self.rows * self.target_length)


def gin_lengths(patterns: Iterable[str]) -> dict[tuple[tuple[str, int], ...], list[str]]:
    """Distinct TASK_FEATURE_LENGTHS literals of the gin files -> the files that set them."""
    found: dict[tuple[tuple[str, int], ...], list[str]] = {}
    for pattern in patterns:
        for path in sorted(GIN_ROOT.glob(pattern)):
            if any(path.match(explainer) for explainer in EXPLAINER_GINS):
                continue
            text = path.read_text(encoding="utf-8")
            match = LENGTHS_RE.search(text)
            # Only training gins pack (T5X's finetune.gin, the local runner's train.gin);
            # inference gins (e.g. the ICE ones) score one example per row.
            if not match or not any(run in text for run in TRAINING_RUN_GINS):
                continue
            lengths = ast.literal_eval(match.group(1))
            key = tuple(sorted((k, int(v)) for k, v in lengths.items()))
            found.setdefault(key, []).append(str(path.relative_to(GIN_ROOT)))
    return found


def pack(dataset, lengths: dict[str, int], first_fit: bool = False) -> PackingStats:
    """Packs with seqio.EncDecFeatureConverter(pack=True), or with this project's
    FirstFitPackingConverter (SeqIO's packer fed in first-fit-decreasing order), and counts
    what lands in the rows."""
    import seqio

    from seahorse_t5x.tasks import packing

    converter_cls = packing.FirstFitPackingConverter if first_fit else seqio.EncDecFeatureConverter
    packed = converter_cls(pack=True)(dataset, lengths)
    rows = examples = input_tokens = target_tokens = target_full = 0
    for row in packed.as_numpy_iterator():
        rows += 1
        examples += int(row["encoder_segment_ids"].max())
        input_tokens += int((row["encoder_input_tokens"] != 0).sum())
        used_targets = int((row["decoder_target_tokens"] != 0).sum())
        target_tokens += used_targets
        target_full += used_targets == lengths["targets"]
    return PackingStats(
        rows=rows,
        examples=examples,
        input_length=lengths["inputs"],
        target_length=lengths["targets"],
        input_tokens=input_tokens,
        target_tokens=target_tokens,
        target_full_rows=target_full,
    )


def _mean_input_tokens(language: str, article_words: float) -> float:
    rate = TOKENS_PER_WORD[language]
    return (article_words + SUMMARY_WORDS) * rate + FIXED_TOKENS


def _share_over(sigma: float, length: int) -> float:
    """Share of the log-normal mix (each part with the given spread) above `length`."""
    total = sum(row[2] for row in SOURCE_MIX)
    share = 0.0
    for _, language, weight, words in SOURCE_MIX:
        mean = _mean_input_tokens(language, words)
        median = mean * math.exp(-(sigma**2) / 2)
        z = (math.log(length) - math.log(median)) / sigma
        share += weight / total * 0.5 * math.erfc(z / math.sqrt(2))
    return share


def calibrated_sigma() -> float:
    """The log-normal spread at which TAIL_ANCHOR['share_over'] of the mix exceeds 2048."""
    low, high = 0.05, 2.0
    for _ in range(60):
        middle = (low + high) / 2
        if _share_over(middle, TAIL_ANCHOR["length"]) < TAIL_ANCHOR["share_over"]:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def synthetic_lengths(count: int, seed: int = 0) -> np.ndarray:
    """`count` input lengths (mT5 tokens) drawn from the SEAHORSE-like mix, in random order."""
    rng = np.random.default_rng(seed)
    sigma = calibrated_sigma()
    weights = np.array([row[2] for row in SOURCE_MIX], dtype=float)
    parts = rng.choice(len(SOURCE_MIX), size=count, p=weights / weights.sum())
    means = np.array([_mean_input_tokens(row[1], row[3]) for row in SOURCE_MIX])
    medians = means[parts] * math.exp(-(sigma**2) / 2)
    lengths = np.exp(np.log(medians) + sigma * rng.standard_normal(count))
    return np.maximum(lengths.round().astype(np.int64), FIXED_TOKENS + 2)


def synthetic_dataset(lengths: np.ndarray, input_length: int):
    """Examples with the given input lengths and a 2-token target ('1'/'0' + EOS).

    Inputs longer than `input_length` are cut to it, as the tasks' truncation does (it
    shortens the article so that the summary and EOS fit).
    """
    import tensorflow as tf

    def generate() -> Iterator[dict[str, np.ndarray]]:
        for i, n in enumerate(np.minimum(lengths, input_length)):
            # Any non-zero ids: only lengths matter to the packer. The last input id is EOS.
            inputs = np.full(int(n), 3 + i % 100, dtype=np.int32)
            inputs[-1] = 1
            yield {"inputs": inputs, "targets": np.array([2 + i % 2, 1], dtype=np.int32)}

    spec = {
        "inputs": tf.TensorSpec([None], tf.int32),
        "targets": tf.TensorSpec([None], tf.int32),
    }
    return tf.data.Dataset.from_generator(generate, output_signature=spec)


def task_dataset(task: str, split: str, lengths: dict[str, int], seed: int):
    """The task's examples as t5x.train reads them (shuffled, truncated to `lengths`)."""
    import seqio

    import seahorse_t5x.tasks  # noqa: F401  (registers the tasks)

    return seqio.get_mixture_or_task(task).get_dataset(
        sequence_length=lengths, split=split, shuffle=True, seed=seed, num_epochs=1
    )


def _summarize(gins: list[str]) -> list[str]:
    """experiments/* files as a count, other gin files by path."""
    experiments = [g for g in gins if g.startswith("experiments/")]
    others = [g for g in gins if not g.startswith("experiments/")]
    return ([f"{len(experiments)} experiments/*.gin"] if experiments else []) + others


def _format(rows: list[dict], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=1)
    header = ["source", "converter", "lengths (inputs/targets)", "rows", "examples", "examples/row",
              "real input tokens", "real target tokens", "rows closed by full targets", "gins"]  # fmt: skip
    lines = []
    if fmt == "markdown":
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
    for r in rows:
        cells = [r["source"], r["converter"], f"{r['inputs']}/{r['targets']}", str(r["rows"]),
                 str(r["examples"]), f"{r['examples_per_row']:.2f}",
                 f"{100 * r['input_share']:.1f}%", f"{100 * r['target_share']:.1f}%",
                 str(r["target_full_rows"]), ", ".join(r["gins"])]  # fmt: skip
        if fmt == "markdown":
            lines.append("| " + " | ".join(cells) + " |")
        else:
            lines.append("  ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gin", action="append", default=None,
                        help=f"gin file glob, repeatable (default: {', '.join(DEFAULT_GINS)})")  # fmt: skip
    parser.add_argument("--data_dir", help="prepared split files (the demo's or real ones)")
    parser.add_argument("--task", default="seahorse_q4", help="training task to pack")
    parser.add_argument("--split", default="train")
    parser.add_argument("--synthetic_examples", type=int, default=20000)
    parser.add_argument("--synthetic_only", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    args = parser.parse_args(argv)

    groups = gin_lengths(args.gin or DEFAULT_GINS)
    if not groups:
        print("packing_report: no gin file sets TASK_FEATURE_LENGTHS", file=sys.stderr)
        return 2
    if not args.synthetic_only and not args.data_dir:
        print("packing_report: give --data_dir (prepared split files) or --synthetic_only",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.data_dir:
        os.environ["SEAHORSE_DATA_DIR"] = args.data_dir
    mix = synthetic_lengths(args.synthetic_examples, args.seed)
    print(
        f"synthetic SEAHORSE-like mix: {len(mix)} inputs, log-normal spread "
        f"{calibrated_sigma():.3f}, mean {mix.mean():.0f} tokens, median "
        f"{np.median(mix):.0f}, over 2048: {100 * (mix > 2048).mean():.1f}%",
        file=sys.stderr,
    )
    results = []
    for key, gins in sorted(groups.items(), key=lambda item: item[0]):
        lengths = dict(key)
        sources = []
        if not args.synthetic_only:
            name = f"{args.task} {args.split} ({args.data_dir})"
            sources.append(
                (
                    name,
                    lambda lengths=lengths: task_dataset(args.task, args.split, lengths, args.seed),
                )
            )
        sources.append(
            (
                "synthetic SEAHORSE-like mix",
                lambda lengths=lengths: synthetic_dataset(mix, lengths["inputs"]),
            )
        )
        for (source, make), first_fit in itertools.product(sources, (False, True)):
            stats = pack(make(), lengths, first_fit=first_fit)
            converter = "FirstFitPackingConverter" if first_fit else "EncDecFeatureConverter"
            results.append({
                "source": source, "converter": converter,
                "inputs": lengths["inputs"], "targets": lengths["targets"],
                "rows": stats.rows, "examples": stats.examples,
                "examples_per_row": stats.examples_per_row, "input_share": stats.input_share,
                "target_share": stats.target_share, "target_full_rows": stats.target_full_rows,
                "gins": _summarize(gins),
            })  # fmt: skip
    print(_format(results, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
