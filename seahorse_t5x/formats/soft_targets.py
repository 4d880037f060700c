"""The soft-target feature of distillation tasks: a teacher's P(yes) carried beside the targets.

A distillation example (`seahorse_t5x.tasks.distillation`) has, beside `targets` (the hard
`1`/`0` answer and EOS), the task feature `soft_targets`: one int32 code per target token,

  code 0        padding (as SeqIO pads)
  code 1        no soft target at this position (EOS, a later piece of the answer)
  code 2 + k    the answer position, teacher P(yes) = k / SCALE (k = round(p * SCALE))

Integer codes because SeqIO packs only int32 features (`trim_and_pack_dataset` casts every
packed feature to int32 and takes trailing zeros for padding): a float P(yes) would be cut
to 0 or 1. With `SCALE = 2**24` the code keeps P(yes) to 6e-8, float32's own spacing near
0.5. Every code of a real position is >= 1, so SeqIO's packer sees the same length as
`targets` and the codes stay aligned with the target tokens in packed rows.

The feature converters pass the feature to the model when a dataset has it
(`tasks.packing.SoftTargetsConverter`), and both trainers' losses use it when a batch has it
(`model.distillation`); nothing else selects distillation. No TensorFlow or JAX here.
"""

from __future__ import annotations

import math

# The task feature and the model feature (the converter passes it through unchanged).
FEATURE = "soft_targets"
SCALE = 2**24
NO_SOFT_TARGET = 1
OFFSET = 2


def encode(p_yes: float) -> int:
    """The code of a teacher P(yes) in [0, 1] (the answer position's value).

    Raises:
      ValueError: for a value outside [0, 1] or not finite.
    """
    p = float(p_yes)
    if not math.isfinite(p) or p < 0.0 or p > 1.0:
        raise ValueError(f"a teacher P(yes) must be a number in [0, 1], got {p_yes!r}")
    return OFFSET + round(p * SCALE)


def decode(code: int) -> float | None:
    """The P(yes) a code holds, or None for padding and non-answer positions."""
    code = int(code)
    if code < OFFSET:
        return None
    return (code - OFFSET) / SCALE
