"""Denser packed rows for T5X training: SeqIO's packer, fed in first-fit-decreasing order.

SeqIO's `EncDecFeatureConverter(pack=True)` packs in dataset order and closes a row as soon
as the next example does not fit (next fit). On SEAHORSE-like inputs (a few hundred to
2048 tokens) that leaves about a quarter of every 2048-token row as padding
(scripts/packing_report.py). `FirstFitPackingConverter` reorders each of SeqIO's packing
windows (`max(task_feature_lengths)` examples, the batch SeqIO packs at a time) so that
SeqIO's own in-order packing produces first-fit-decreasing rows, then shuffles the packed
rows so that a batch does not hold the window's longest examples together. The rows are
still made by SeqIO's `trim_and_pack_dataset`; the examples and their tokens are unchanged.

In gin (gin/runs/finetune.gin does this):

    from seahorse_t5x.tasks import packing
    models.EncoderDecoderModel.feature_converter_cls = @packing.FirstFitPackingConverter

Both converters here also carry a distillation task's soft targets
(`formats.soft_targets`) to the model when the dataset has them, packed beside the
targets; a dataset without them converts exactly as SeqIO's converter does.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import seqio
import tensorflow as tf

from seahorse_t5x.formats import soft_targets

# Packed rows shuffled together after packing: about one window of SEAHORSE rows.
ROW_SHUFFLE_BUFFER = 1024
ROW_SHUFFLE_SEED = 0


def first_fit_decreasing_order(
    input_lengths: np.ndarray,
    target_lengths: np.ndarray,
    input_capacity: int,
    target_capacity: int,
) -> np.ndarray:
    """An order of the examples in which in-order packing gives first-fit-decreasing rows.

    Examples are placed, longest input first, into the first row with room for both their
    inputs and their targets (lengths cut to the capacities, as SeqIO cuts them); the rows
    are then listed one after the other, each with its members in placement order.
    In-order packing closes a row exactly where the next one starts: that row's first
    member fitted in no earlier row when it was placed, and rows only fill up.

    Example: input lengths [300, 1900, 200, 1700] in rows of 2048 -> order [1, 3, 0, 2],
    packed as {1900}, {1700, 300}, {200}.

    Returns:
      A permutation of range(len(input_lengths)) (int64).
    """
    sizes = np.minimum(np.asarray(input_lengths, np.int64), input_capacity)
    target_sizes = np.minimum(np.asarray(target_lengths, np.int64), target_capacity)
    count = len(sizes)
    free_inputs = np.zeros(count, np.int64)
    free_targets = np.zeros(count, np.int64)
    row_of = np.zeros(count, np.int64)
    rows = 0
    placement = np.argsort(-sizes, kind="stable")
    for example in placement:
        fits = np.flatnonzero(
            (free_inputs[:rows] >= sizes[example]) & (free_targets[:rows] >= target_sizes[example])
        )
        if fits.size:
            row = fits[0]
        else:
            row = rows
            rows += 1
            free_inputs[row] = input_capacity
            free_targets[row] = target_capacity
        free_inputs[row] -= sizes[example]
        free_targets[row] -= target_sizes[example]
        row_of[example] = row
    return placement[np.argsort(row_of[placement], kind="stable")].astype(np.int64)


def first_fit_windows(
    dataset: tf.data.Dataset, task_feature_lengths: Mapping[str, int]
) -> tf.data.Dataset:
    """The features of `task_feature_lengths` (`inputs`, `targets`, and any passed
    through), each packing window in first-fit order.

    The window is SeqIO's packing batch, `max(task_feature_lengths.values())` examples, so
    the windows line up with the ones SeqIO packs. Token id 0 is padding (as SeqIO assumes
    when it packs), so an example's length is its count of non-zero ids.
    """
    keys = tuple(task_feature_lengths)
    window = max(task_feature_lengths.values())
    capacities = {key: int(task_feature_lengths[key]) for key in keys}

    def trimmed(example):
        return {key: example[key][: capacities[key]] for key in keys}

    def reorder(batch):
        lengths = {
            key: tf.reduce_sum(tf.cast(tf.not_equal(batch[key], 0), tf.int64), axis=1)
            for key in keys
        }
        order = tf.numpy_function(
            lambda inputs, targets: first_fit_decreasing_order(
                inputs, targets, capacities["inputs"], capacities["targets"]
            ),
            [lengths["inputs"], lengths["targets"]],
            tf.int64,
        )
        order.set_shape([None])
        reordered = {key: tf.gather(batch[key], order) for key in keys}
        reordered.update({f"{key}_length": tf.gather(lengths[key], order) for key in keys})
        return reordered

    def unpadded(example):
        return {key: example[key][: example[f"{key}_length"]] for key in keys}

    dataset = dataset.map(trimmed, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.padded_batch(window, padded_shapes={key: [-1] for key in keys})
    dataset = dataset.map(reorder, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.unbatch().map(unpadded, num_parallel_calls=tf.data.AUTOTUNE)


class SoftTargetsConverter(seqio.EncDecFeatureConverter):
    """`seqio.EncDecFeatureConverter` that passes a distillation task's soft targets on.

    When the dataset has the soft-target feature, it is packed (or padded) with the length
    of `targets` and reaches the model under its own name; the caller's
    `task_feature_lengths` stay `inputs` and `targets`. Without it, the parent's conversion.
    """

    def __call__(
        self, ds: tf.data.Dataset, task_feature_lengths: Mapping[str, int]
    ) -> tf.data.Dataset:
        if soft_targets.FEATURE not in ds.element_spec:
            return super().__call__(ds, task_feature_lengths)
        lengths = dict(task_feature_lengths)
        lengths[soft_targets.FEATURE] = lengths["targets"]
        saved = self._passthrough_features
        self._passthrough_features = {
            **saved,
            soft_targets.FEATURE: seqio.FeatureConverter.FeatureSpec(dtype=tf.int32),
        }
        try:
            return super().__call__(ds, lengths)
        finally:
            self._passthrough_features = saved


class FirstFitPackingConverter(SoftTargetsConverter):
    """`seqio.EncDecFeatureConverter` whose packed rows are filled first-fit-decreasing.

    Unpacked conversion (`pack=False`, as T5X's inference uses) is the parent's.
    """

    def _convert_features(
        self, ds: tf.data.Dataset, task_feature_lengths: Mapping[str, int]
    ) -> tf.data.Dataset:
        if not self.pack:
            return super()._convert_features(ds, task_feature_lengths)
        ds = first_fit_windows(ds, task_feature_lengths)
        ds = super()._convert_features(ds, task_feature_lengths)
        return ds.shuffle(ROW_SHUFFLE_BUFFER, seed=ROW_SHUFFLE_SEED)
