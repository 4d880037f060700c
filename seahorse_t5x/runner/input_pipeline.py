"""Training batches from SeqIO tasks and mixtures: packed, deterministic, resumable.

`seqio.get_dataset` with `EncDecFeatureConverter(pack=True)` packs several examples into
each row (segment ids and positions tell the model where one ends); the order is fixed by
the seed, and a resumed run skips the batches it already consumed, so it sees exactly
the batches an uninterrupted run would have seen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import jax
import numpy as np

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import soft_targets

# Features the model reads; the converter's other outputs are not sent to the devices.
MODEL_FEATURES_PACKED = (
    "encoder_input_tokens",
    "encoder_segment_ids",
    "encoder_positions",
    "decoder_input_tokens",
    "decoder_target_tokens",
    "decoder_loss_weights",
    "decoder_segment_ids",
    "decoder_positions",
)
MODEL_FEATURES_UNPACKED = (
    "encoder_input_tokens",
    "decoder_input_tokens",
    "decoder_target_tokens",
    "decoder_loss_weights",
)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Which examples a run trains on, and in what order.

    Attributes:
      mixture_or_task_name: a registered SeqIO task or mixture.
      task_feature_lengths: e.g. `{"inputs": 2048, "targets": 64}`; with packing the
        targets length bounds how many examples share a row (each needs 2 target tokens).
      batch_size: global batch size (rows), split evenly over hosts.
      seed: fixes the shuffle and the mixture sampling.
      pack: pack several examples per row (T5X's default for training).
      split: dataset split.
      use_cached: read SeqIO's cached (preprocessed) copy of the task.
    """

    mixture_or_task_name: str
    task_feature_lengths: Mapping[str, int]
    batch_size: int
    seed: int = 0
    pack: bool = True
    split: str = "train"
    use_cached: bool = False

    def to_json(self) -> dict:
        return {
            "mixture_or_task_name": self.mixture_or_task_name,
            "task_feature_lengths": dict(self.task_feature_lengths),
            "batch_size": self.batch_size,
            "seed": self.seed,
            "pack": self.pack,
            "split": self.split,
        }


def check_data_config(config: DataConfig) -> None:
    """Raises UserError for an unknown task, missing feature lengths or an odd batch."""
    import seqio

    name = config.mixture_or_task_name
    if name not in seqio.TaskRegistry.names() and name not in seqio.MixtureRegistry.names():
        known = sorted(
            n for n in seqio.TaskRegistry.names() if n.startswith(constants.SEAHORSE_BENCHMARK)
        )
        raise errors.UserError(
            f"no SeqIO task or mixture named {name!r} (a task of your own: pass --module "
            "FILE.py that registers it, or `import` it in the gin file); seahorse tasks: "
            f"{', '.join(known[:20]) or 'none registered'}"
        )
    missing = {"inputs", "targets"} - set(config.task_feature_lengths)
    if missing:
        raise errors.UserError(
            f"TASK_FEATURE_LENGTHS needs keys 'inputs' and 'targets'; missing {sorted(missing)}"
        )
    if config.batch_size % jax.process_count():
        raise errors.UserError(
            f"BATCH_SIZE={config.batch_size} does not split over {jax.process_count()} hosts"
        )


def train_batches(config: DataConfig, start_batch: int = 0) -> Iterator[dict[str, np.ndarray]]:
    """This host's share of each training batch, forever, starting at batch `start_batch`.

    Raises:
      UserError: for an unknown task, incomplete feature lengths or an unsplittable batch.
    """
    import seqio

    from seahorse_t5x.tasks import packing

    check_data_config(config)
    shard_info = (
        seqio.ShardInfo(index=jax.process_index(), num_shards=jax.process_count())
        if jax.process_count() > 1
        else None
    )
    dataset = seqio.get_dataset(
        config.mixture_or_task_name,
        task_feature_lengths=dict(config.task_feature_lengths),
        feature_converter=packing.SoftTargetsConverter(pack=config.pack),
        dataset_split=config.split,
        use_cached=config.use_cached,
        shuffle=True,
        num_epochs=None,
        shard_info=shard_info,
        seed=config.seed,
        verbose=False,
    )
    features = MODEL_FEATURES_PACKED if config.pack else MODEL_FEATURES_UNPACKED
    if soft_targets.FEATURE in dataset.element_spec:  # a distillation task's
        features = (*features, soft_targets.FEATURE)
    dataset = dataset.map(lambda ex: {k: ex[k] for k in features})
    dataset = dataset.batch(config.batch_size // jax.process_count(), drop_remainder=True)
    # Replaying the preprocessing of the skipped batches is what makes the resumed order
    # identical; it costs seconds at this project's data sizes.
    dataset = dataset.skip(start_batch).prefetch(2)
    return dataset.as_numpy_iterator()


def real_token_counts(batch: Mapping[str, np.ndarray]) -> tuple[int, int]:
    """(non-padding encoder tokens, encoder token slots) of a batch: packing's efficiency."""
    tokens = np.asarray(batch["encoder_input_tokens"])
    return int(np.count_nonzero(tokens)), int(tokens.size)


def target_token_count(batch: Mapping[str, np.ndarray]) -> int:
    return int(np.count_nonzero(np.asarray(batch["decoder_loss_weights"])))
