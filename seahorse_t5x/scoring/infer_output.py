"""T5X `infer.py` output files read back in dataset order, for `t5x-scores` and
`t5x-explanations`.

A run writes `INFER_OUTPUT_DIR/{task}-{mode}.jsonl-00000-of-00001`, one JSON object per
example in dataset order; with `infer.num_shards = n`, shard k holds the examples k, k + n,
k + 2n, ... (SeqIO's `Dataset.shard`) in files `...-0000k-of-0000n`. `order_shards` checks that
the files given are one complete set, `read_infer_records` interleaves their records back,
each checked by the caller's `check_record`. Local files and remote ones (gs://, through
TensorFlow) are read alike (`open_text`, `exists`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence

from seahorse_t5x import errors, fileio

_SHARD_PATTERN = re.compile(r"-(\d{5})-of-(\d{5})$")


def open_text(path: str):
    """A text file for reading: a local file through `fileio` (a byte-order mark dropped;
    bytes that are not UTF-8 reported as file:line), a remote one (gs://) through TensorFlow."""
    if "://" in path:
        import tensorflow as tf  # only for remote (gs://) paths

        return tf.io.gfile.GFile(path, "r")
    return fileio.open_text_input(path)


def exists(path: str) -> bool:
    """Whether a local or remote (gs://) file exists."""
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def _json_lines(path: str) -> Iterator[tuple[int, dict]]:
    return fileio.iter_json_objects(path, opener=open_text)


def order_shards(paths: Sequence[str]) -> list[str]:
    """The infer output files in shard order, checked to be one complete set.

    A single file without a shard suffix is returned as it is.

    Raises:
      UserError: for no files, a mix of shard sets, duplicates or missing shards.
    """
    if not paths:
        raise errors.UserError("no --infer_output file given")
    for path in paths:
        if not exists(path):
            raise errors.UserError(f"infer output not found: {path}")
    shards: dict[int, str] = {}
    totals = set()
    for path in paths:
        match = _SHARD_PATTERN.search(path)
        if match is None:
            if len(paths) > 1:
                raise errors.UserError(
                    f"{path} has no -NNNNN-of-NNNNN shard suffix; give one unsharded file, "
                    "or all shards of one inference run"
                )
            return [path]
        index, total = int(match.group(1)), int(match.group(2))
        if index in shards:
            raise errors.UserError(f"shard {index} given twice: {shards[index]} and {path}")
        shards[index] = path
        totals.add(total)
    if len(totals) != 1:
        raise errors.UserError(f"the files come from runs with different shard counts {totals}")
    total = totals.pop()
    missing = sorted(set(range(total)) - set(shards))
    if missing:
        raise errors.UserError(
            f"shards {missing} of {total} are missing; T5X writes one file per shard_id and "
            "the examples are interleaved across them, so all are needed"
        )
    return [shards[i] for i in range(total)]


def read_infer_records(
    paths: Sequence[str],
    check_record: Callable[[str, int, dict], None],
    expected: str,
) -> list[tuple[str, int, dict]]:
    """The records of one infer.py run's output files in dataset order, each as (file, line,
    record): a single file as it is, shards interleaved back (shard k of n holds examples
    k, k + n, ...).

    Args:
      paths: the output file, or all its `-NNNNN-of-NNNNN` shard files (`order_shards`).
      check_record: raises a DataError for a record of the wrong kind.
      expected: what one line holds, for the message about empty files.

    Raises:
      UserError / DataError: for incomplete shard sets, bad JSON, records `check_record`
        refuses, no record at all, or shard sizes no round-robin split gives.
    """
    ordered = order_shards(paths)
    per_shard = []
    for path in ordered:
        records = []
        for number, record in _json_lines(path):
            check_record(path, number, record)
            records.append((path, number, record))
        per_shard.append(records)
    n = len(per_shard)
    # A later shard may be empty (a split with fewer examples than shards); all empty is not.
    if not any(per_shard):
        raise fileio.empty_file_error(ordered[0], expected)
    if n == 1:
        return per_shard[0]
    # Shard k holds examples k, k + n, ...: its sizes are equal or one less than shard 0's.
    sizes = [len(records) for records in per_shard]
    if any(not (sizes[0] - 1 <= size <= sizes[0]) for size in sizes) or any(
        a < b for a, b in zip(sizes, sizes[1:], strict=False)
    ):
        raise errors.UserError(
            f"shard sizes {sizes} cannot come from one dataset split round-robin into {n}"
        )
    merged = []
    for position in range(sizes[0]):
        for records in per_shard:
            if position < len(records):
                merged.append(records[position])
    return merged
