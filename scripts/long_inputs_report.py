"""How many of a benchmark's items do not fit an input length, and what windows would cost
(docs/benchmarks.md; no PERFORMANCE.md table).

For each benchmark named (any of `seahorse-t5x`'s registered benchmarks, read from its files
as released), every distinct (premise, hypothesis) pair is tokenized with the given
SentencePiece vocabulary and built into the model input exactly as `score` builds it:

- items whose article is cut at `--input_length` (`--truncation keep_summary`, the default),
- of those, the share of article tokens lost,
- the windows `--long_inputs windows` would score instead (`inference/windows.py`), and
- items whose summary alone does not fit beside the markers.

Usage (mT5's vocabulary, SEAHORSE's length):

    python scripts/long_inputs_report.py --vocab mc4.250000.100extra.model \
        --input_length 2048 --benchmark llm_aggrefact=/data/llm_aggrefact \
        --benchmark summeval=/data/summeval/model_annotations.aligned.paired.jsonl
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def pairs_of(name: str, path: str) -> tuple[list[tuple[str, str]], int]:
    """The benchmark's distinct (premise, hypothesis) pairs, and the rows its reader dropped."""
    from seahorse_t5x.data.benchmarks import registry

    results = registry.get(name).read_all(path)
    seen: dict[tuple[str, str], None] = {}
    for result in results:
        for item in result.examples:
            seen.setdefault((item["premise"], item["hypothesis"]), None)
    return list(seen), sum(len(r.dropped) for r in results)


def length_report(vocab, pairs: list[tuple[str, str]], input_length: int, overlap: int) -> dict:
    """Counts for `pairs` at `input_length` (see the module docstring)."""
    from seahorse_t5x.inference import inputs, windows

    premises = [p for p, _ in pairs]
    hypotheses = [h for _, h in pairs]
    cut = inputs.encode_pairs(vocab, premises, hypotheses, input_length)
    article_tokens = np.array([len(t) for t in inputs.encode_texts(vocab, premises)])
    windowed = windows.encode_windows(vocab, premises, hypotheses, input_length, overlap=overlap)
    over = cut.article_tokens_dropped > 0
    return {
        "items": len(pairs),
        "over_length": int(over.sum()),
        "article_tokens_lost": float(
            cut.article_tokens_dropped.sum() / max(1, article_tokens.sum())
        ),
        "summaries_cut": int(cut.summary_truncated.sum()),
        "windows": int(windowed.windows.sum()),
        "max_windows": int(windowed.windows.max(initial=0)),
    }


def markdown(rows: list[tuple[str, dict]], input_length: int) -> str:
    lines = [
        f"| benchmark | items | over {input_length} tokens | article tokens lost | "
        "summaries cut | windows (overlap) | most windows per item |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows:
        share = r["over_length"] / r["items"] if r["items"] else 0.0
        lines.append(
            f"| {name} | {r['items']} | {r['over_length']} ({share:.1%}) | "
            f"{r['article_tokens_lost']:.1%} | {r['summaries_cut']} | {r['windows']} | "
            f"{r['max_windows']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", required=True, help="SentencePiece .model, or `demo`")
    parser.add_argument("--input_length", type=int, default=2048)
    parser.add_argument("--window_overlap", type=int, default=1)
    parser.add_argument(
        "--benchmark",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="a registered benchmark and its released file or folder (repeatable)",
    )
    args = parser.parse_args(argv)

    from seahorse_t5x import errors
    from seahorse_t5x.formats import input_format, vocab

    try:
        input_format.check_input_length(args.input_length, "--input_length")
        spm = vocab.get_vocabulary(args.vocab)
        rows = []
        for spec in args.benchmark:
            name, sep, path = spec.partition("=")
            if not sep or not path:
                raise errors.UserError(f"--benchmark takes NAME=PATH, got {spec!r}")
            pairs, dropped = pairs_of(name, path)
            report = length_report(spm, pairs, args.input_length, args.window_overlap)
            rows.append((name, report))
            if dropped:
                print(f"{name}: {dropped} rows dropped by the reader", file=sys.stderr)
    except errors.UserError as e:
        print(f"long_inputs_report: error: {e}", file=sys.stderr)
        return 2
    print(markdown(rows, args.input_length))
    return 0


if __name__ == "__main__":
    sys.exit(main())
