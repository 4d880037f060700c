"""`TrainConfig`: everything a training run depends on, and the defaults the gin macros take.

Kept apart from the trainer, which imports JAX, so that `seahorse-t5x train --help` can show
each macro's meaning and default without starting JAX.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from seahorse_t5x import errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import precision

BEST_METRICS = ("roc_auc", "pearson")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on (the gin macros in brackets).

    Attributes:
      model_dir: run directory: checkpoints, logs [MODEL_DIR].
      mixture_or_task_name: SeqIO task or mixture to train on [MIXTURE_OR_TASK_NAME].
      task_feature_lengths: `{"inputs": N, "targets": M}` [TASK_FEATURE_LENGTHS].
      train_steps: total steps, counted from this run's step 0 (a resumed run counts
        the restored steps) [TRAIN_STEPS].
      batch_size: global rows per step [BATCH_SIZE].
      learning_rate: peak learning rate [LEARNING_RATE].
      learning_rate_schedule: `constant` (T5X fine-tuning) or `cosine` (decays to a tenth
        of the peak at `train_steps`) [LEARNING_RATE_SCHEDULE].
      warmup_steps: linear warmup from 0 over this many steps [WARMUP_STEPS].
      learning_rate_multipliers: `{parameter path regex: factor}`, e.g.
        `{"rel_embedding": 30}` to train the relative-position biases 30x faster
        [LEARNING_RATE_MULTIPLIERS].
      clip_gradient_norm: clip the gradients' global norm (None: off) [CLIP_GRADIENT_NORM].
      dropout_rate: dropout during training [DROPOUT_RATE].
      initial_checkpoint_path: start from these weights (HF, T5X or orbax), or from
        scratch when None [INITIAL_CHECKPOINT_PATH].
      eval_period: validate every this many steps; 0 = only at the end [EVAL_PERIOD].
      random_seed: initialisation, data order and dropout [RANDOM_SEED].
      model_size: named size of `model.configs` when training from scratch [MODEL_SIZE].
      model_family: the family of that model (`model/families.py`: `mt5`, `mt0`, `t5.1.1`,
        `flan-t5`; it sets the vocabulary's rows) [MODEL_FAMILY].
      model_overrides: `MT5Config` fields to change (e.g. `{"num_encoder_layers": 4}`).
      dtype: the dtype of the model's matrix products [DTYPE]: `auto` (bfloat16 on GPUs and
        TPUs, float32 on CPUs: `inference/precision.py`), `float32` or `bfloat16`
        (bfloat16 operands accumulated in float32, as T5X trains). Weights, gradients and
        the optimizer state are float32 in both. A dtype in `model_overrides` is taken
        when this is `auto`.
      optimizer: `adafactor` (T5X fine-tuning) or `adamw`.
      weight_decay: AdamW's decoupled weight decay.
      checkpoint_period: save every this many steps (and at each validation and the end).
      keep_checkpoints: how many of the newest checkpoints to keep (plus the best).
      pack: pack several examples per row.
      validation_tasks: score tasks for validation; None = the training task's (or the
        mixture's tasks') `_score` variants; () = no validation.
      validation_split: split the validation reads.
      validation_max_examples: cap per validation task (None = all).
      eval_batch_size: rows per validation batch at the input length (shorter length
        buckets get more rows).
      best_metric: `roc_auc` or `pearson`, averaged over the validation tasks.
      z_loss: T5X's auxiliary `z_loss * log(Z)^2` term (keeps logits from drifting).
      distill_alpha: on a distillation task (examples with a teacher's P(yes)), the weight
        of the soft loss at the answer position, the hard loss taking the rest
        (`model/distillation.py`; ignored on other tasks) [DISTILL_ALPHA].
      distill_temperature: the distillation loss's temperature [DISTILL_TEMPERATURE].
      log_period: print and log the training numbers every this many steps.
      model_parallel: size of the mesh's `model` axis (the rest of the devices is `data`).
      data_parallel: size of the `data` axis; -1 = all devices left after `model`, a
        smaller value uses only the first data x model devices (single host).
      coordinator_address: `host:port` or `auto` to join a multi-host run.
      num_processes: hosts in the multi-host run.
      process_id: this host's index.
    """

    model_dir: str
    mixture_or_task_name: str
    task_feature_lengths: Mapping[str, int]
    train_steps: int
    batch_size: int = 32
    learning_rate: float = 1e-3
    learning_rate_schedule: str = "constant"
    warmup_steps: int = 0
    learning_rate_multipliers: Mapping[str, float] = dataclasses.field(default_factory=dict)
    clip_gradient_norm: float | None = None
    dropout_rate: float = 0.1
    initial_checkpoint_path: str | None = None
    eval_period: int = 1000
    random_seed: int = 0
    model_size: str = "small"
    model_family: str = "mt5"
    model_overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    dtype: str = "auto"
    optimizer: str = "adafactor"
    weight_decay: float = 0.0
    checkpoint_period: int = 1000
    keep_checkpoints: int = 3
    pack: bool = True
    validation_tasks: Sequence[str] | None = None
    validation_split: str = "validation"
    validation_max_examples: int | None = None
    eval_batch_size: int = 32
    best_metric: str = "roc_auc"
    z_loss: float = 1e-4
    distill_alpha: float = 1.0
    distill_temperature: float = 1.0
    log_period: int = 10
    model_parallel: int = 1
    data_parallel: int = -1
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None

    def check(self) -> None:
        """Raises UserError for values no run can use."""
        for name in ("train_steps", "batch_size", "checkpoint_period", "log_period"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise errors.UserError(f"{name} must be a positive int, got {value!r}")
        if self.eval_period < 0:
            raise errors.UserError(f"eval_period must be >= 0, got {self.eval_period}")
        if self.dtype not in precision.CHOICES:
            raise errors.UserError(
                f"DTYPE must be one of {', '.join(precision.CHOICES)}, got {self.dtype!r}"
            )
        if self.best_metric not in BEST_METRICS:
            raise errors.UserError(
                f"best_metric must be one of {', '.join(BEST_METRICS)}, got {self.best_metric!r}"
            )
        if not 0.0 <= self.distill_alpha <= 1.0:
            raise errors.UserError(f"DISTILL_ALPHA must be in [0, 1], got {self.distill_alpha!r}")
        if not self.distill_temperature > 0.0:
            raise errors.UserError(
                f"DISTILL_TEMPERATURE must be > 0, got {self.distill_temperature!r}"
            )
        if not self.model_dir:
            raise errors.UserError("MODEL_DIR is empty")
        input_length = dict(self.task_feature_lengths).get("inputs")
        if input_length is not None:
            input_format.check_input_length(input_length, "TASK_FEATURE_LENGTHS['inputs']")
