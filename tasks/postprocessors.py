"""SeqIO postprocessors: the other direction of the premise/hypothesis text-to-text format.

Predict-mode tasks decode `1`/`0` answers (`predict_postprocessor`); score-mode tasks hand
T5X's `(targets, scores)` metrics the gold `label` (`score_postprocessor`). The preprocessors
that build the inputs are `seahorse_t5x.tasks.preprocessors`'.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from seahorse_t5x import constants


def label_from_text(text: str | bytes) -> int:
    """ "1" -> 1, "0" -> 0, anything else (a malformed prediction) -> -1."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    text = text.strip()
    if text == constants.TARGET_YES:
        return 1
    if text == constants.TARGET_NO:
        return 0
    return -1


def predict_postprocessor(
    output_or_target: str | bytes,
    example: Mapping[str, object] | None = None,
    is_target: bool = False,
) -> int:
    """`postprocess_fn` for predict-mode tasks: decoded "1"/"0" text to 1/0 (else -1)."""
    del example, is_target  # targets and predictions are parsed alike
    return label_from_text(output_or_target)


def score_postprocessor(
    output_or_target: object,
    example: Mapping[str, object] | None = None,
    is_target: bool = False,
) -> object:
    """`postprocess_fn` for score-mode tasks: the gold `label` for targets.

    In score mode every target is the constant "1"; T5X calls the task's postprocess_fn on
    it with `example=` (the example's features) and `is_target=True`, which is how the gold
    label reaches the `(targets, scores)` metric. A float label (graded benchmarks) stays a
    float; a 0/1 label becomes an int. Model outputs (scores) pass through unchanged.

    Raises:
      ValueError: if a target arrives without its example's `label`.
    """
    if not is_target:
        return output_or_target
    if example is None or "label" not in example:
        raise ValueError("score-mode targets need the example's `label` feature")
    label = np.asarray(example["label"])
    return int(label) if np.issubdtype(label.dtype, np.integer) else float(label)
