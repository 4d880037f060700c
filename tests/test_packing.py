"""seahorse_t5x.tasks.packing: SeqIO's packer fed in first-fit-decreasing order packs the same
examples, token for token, into the rows a first-fit-decreasing count predicts."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import seqio
import tensorflow as tf

from seahorse_t5x.tasks import packing


def _dataset(input_lengths, target_lengths):
    def generate():
        for i, (n, m) in enumerate(zip(input_lengths, target_lengths, strict=True)):
            # Distinct non-zero ids per example, so each packed segment names its example.
            yield {
                "inputs": np.arange(1, n + 1, dtype=np.int32) + 1000 * (i + 1),
                "targets": np.full(m, 2 + i % 5, dtype=np.int32),
            }

    spec = {"inputs": tf.TensorSpec([None], tf.int32), "targets": tf.TensorSpec([None], tf.int32)}
    return tf.data.Dataset.from_generator(generate, output_signature=spec)


def _segments(rows, feature):
    found = collections.Counter()
    for row in rows:
        tokens, segments = row[f"{feature}"], row[f"{feature.split('_')[0]}_segment_ids"]
        for segment in set(segments.tolist()) - {0}:
            found[tuple(tokens[segments == segment].tolist())] += 1
    return found


def _first_fit_rows(sizes, targets, capacity, target_capacity) -> int:
    """Rows of first fit decreasing, counted directly (longest first, first row with room)."""
    rows: list[list[int]] = []
    for size, target in sorted(zip(sizes, targets, strict=True), key=lambda st: -st[0]):
        for row in rows:
            if row[0] + size <= capacity and row[1] + target <= target_capacity:
                row[0] += size
                row[1] += target
                break
        else:
            rows.append([size, target])
    return len(rows)


def test_order_example_from_the_docstring():
    order = packing.first_fit_decreasing_order(
        np.array([300, 1900, 200, 1700]), np.array([2, 2, 2, 2]), 2048, 64
    )
    assert order.tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize(("capacity", "target_capacity"), [(256, 64), (256, 6)])
def test_converter_packs_every_example_into_first_fit_rows(capacity, target_capacity):
    rng = np.random.default_rng(5)
    # Up to a full row (the tasks cut longer inputs before the converter sees them).
    input_lengths = rng.integers(5, capacity + 1, size=700)
    target_lengths = np.full(700, 2)
    lengths = {"inputs": capacity, "targets": target_capacity}
    rows = list(
        packing.FirstFitPackingConverter(pack=True)(
            _dataset(input_lengths, target_lengths), lengths
        ).as_numpy_iterator()
    )
    # SeqIO packs windows of max(lengths) examples: first fit within each window.
    window = max(lengths.values())
    expected = sum(
        _first_fit_rows(
            input_lengths[start : start + window],
            target_lengths[start : start + window],
            capacity,
            target_capacity,
        )
        for start in range(0, len(input_lengths), window)
    )
    assert len(rows) == expected
    # Every example lands in a row once, its inputs intact.
    wanted = collections.Counter(
        tuple((np.arange(1, n + 1) + 1000 * (i + 1)).tolist()) for i, n in enumerate(input_lengths)
    )
    assert _segments(rows, "encoder_input_tokens") == wanted
    plain = list(
        seqio.EncDecFeatureConverter(pack=True)(
            _dataset(input_lengths, target_lengths), lengths
        ).as_numpy_iterator()
    )
    assert len(rows) <= len(plain)


def test_unpacked_conversion_is_seqios():
    lengths = {"inputs": 64, "targets": 4}
    ours = packing.FirstFitPackingConverter(pack=False)(_dataset([10, 50], [2, 2]), lengths)
    theirs = seqio.EncDecFeatureConverter(pack=False)(_dataset([10, 50], [2, 2]), lengths)
    for a, b in zip(ours.as_numpy_iterator(), theirs.as_numpy_iterator(), strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
