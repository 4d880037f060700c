"""Checks that SeqIO's cache of the tasks (scripts/cache_tasks.sh) holds the same examples
as preprocessing on the fly, as T5X and the local runner read them.

For each task and split: the examples of `seqio.get_dataset(..., use_cached=False)` and
of `use_cached=True` (the cache found through `--cache_dir`, as T5X's
`--seqio_additional_cache_dirs` adds it) are compared as multisets of all their features,
token for token, at the given lengths (the cache stops before truncation). Then the local
runner's input pipeline (`runner.input_pipeline.train_batches`, use_cached=True) is read
for a few packed batches, and every example it packed (its segment's tokens) must be one
of the uncached training examples.

Usage:
    SEAHORSE_DATA_DIR=/tmp/demo/prepared SEAHORSE_VOCAB=demo \
      python scripts/compare_cached_tasks.py --cache_dir /tmp/cache \
      --tasks seahorse_q4,seahorse_q4_score
"""

from __future__ import annotations

import argparse
import collections
import sys


def _examples(task: str, split: str, lengths: dict[str, int], use_cached: bool):
    import seqio

    dataset = seqio.get_dataset(
        task,
        task_feature_lengths=lengths,
        dataset_split=split,
        use_cached=use_cached,
        shuffle=False,
        num_epochs=1,
        feature_converter=seqio.PassThroughFeatureConverter(),
    )
    counted = collections.Counter()
    for example in dataset.as_numpy_iterator():
        key = tuple(
            (name, value.tobytes() if hasattr(value, "tobytes") else repr(value))
            for name, value in sorted(example.items())
        )
        counted[key] += 1
    return counted


def _inputs(task: str, split: str, lengths: dict[str, int]) -> collections.Counter:
    import seqio

    dataset = seqio.get_mixture_or_task(task).get_dataset(
        sequence_length=lengths, split=split, shuffle=False, num_epochs=1, use_cached=False
    )
    return collections.Counter(
        tuple(int(t) for t in ex["inputs"][: lengths["inputs"]])
        for ex in dataset.as_numpy_iterator()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache_dir", required=True)
    parser.add_argument("--tasks", default="seahorse_q4,seahorse_q4_score")
    parser.add_argument("--splits", default="train,validation,test")
    parser.add_argument("--input_length", type=int, default=512)
    parser.add_argument("--runner_batches", type=int, default=3)
    args = parser.parse_args(argv)

    import seqio

    import seahorse_t5x.tasks  # noqa: F401  (registers the tasks)
    from seahorse_t5x.runner import input_pipeline

    seqio.add_global_cache_dirs([args.cache_dir])
    lengths = {"inputs": args.input_length, "targets": 2}
    failures = 0
    for task in args.tasks.split(","):
        cached_task = seqio.get_mixture_or_task(task)
        print(f"{task}: cache at {cached_task.cache_dir}")
        for split in args.splits.split(","):
            plain = _examples(task, split, lengths, use_cached=False)
            cached = _examples(task, split, lengths, use_cached=True)
            same = plain == cached
            failures += not same
            print(
                f"  {split}: {sum(plain.values())} examples on the fly, "
                f"{sum(cached.values())} from the cache: "
                f"{'identical' if same else 'DIFFERENT'}"
            )
    train_task = args.tasks.split(",")[0]
    train_lengths = {"inputs": args.input_length, "targets": 32}
    known = _inputs(train_task, "train", train_lengths)
    config = input_pipeline.DataConfig(
        mixture_or_task_name=train_task,
        task_feature_lengths=train_lengths,
        batch_size=8,
        use_cached=True,
    )
    packed = unknown = 0
    batches = input_pipeline.train_batches(config)
    for _ in range(args.runner_batches):
        batch = next(batches)
        tokens, segments = batch["encoder_input_tokens"], batch["encoder_segment_ids"]
        for row_tokens, row_segments in zip(tokens, segments, strict=True):
            for segment in set(row_segments.tolist()) - {0}:
                example = tuple(int(t) for t in row_tokens[row_segments == segment])
                packed += 1
                unknown += example not in known
    failures += unknown > 0
    print(
        f"local runner ({train_task}, use_cached=True): {args.runner_batches} packed batches, "
        f"{packed} examples, {packed - unknown} of them among the uncached training examples"
    )
    print("cache check: " + ("passed" if not failures else f"{failures} difference(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
