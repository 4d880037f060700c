"""SeqIO metric functions: thin adapters from T5X's evaluation outputs to `stats`.

SeqIO decides a metric's kind from its parameter names: `(targets, scores)` is a score
metric (T5X's score mode: one log-probability per example, in dataset order) and
`(targets, predictions)` a predict metric (decoded strings). The names below must stay
exactly as they are.

Score metrics are computed on exp(score) (`probabilities`): with this project's run gins the
model is `t5x_models.LabelScoringModel`, whose score is log P(yes), so the numbers are those
of `seahorse-t5x evaluate` on P(yes) (ROC-AUC and rank statistics do not change under exp;
Pearson rho does).

`targets` are what the task's `postprocess_fn(target, example=..., is_target=True)`
returned: the gold label as an int, float, `"1"`/`"0"` string or bytes, or a dict holding it
under `"label"`. Values are floats for SeqIO's loggers; an undefined statistic is NaN and
its reason goes to the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

import numpy as np

from seahorse_t5x import constants
from seahorse_t5x.evaluation import stats

_LABEL_KEY = "label"


def label_value(target: object) -> float:
    """One gold target as a float label (1.0 = Yes); NaN when it holds no label.

    Raises:
      ValueError: the target is a string or type that is not a label at all.
    """
    if isinstance(target, Mapping):
        target = target.get(_LABEL_KEY)
    if target is None:
        return math.nan
    if isinstance(target, bytes):
        target = target.decode("utf-8")
    if isinstance(target, str):
        text = target.strip()
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"target {target!r} is not a label (expected '1' or '0')") from None
    if isinstance(target, (bool, int, float, np.integer, np.floating)):
        return float(target)
    raise ValueError(f"target of type {type(target).__name__} is not a label")


def prediction_value(prediction: object) -> float:
    """A decoded prediction as 1.0 (`"1"`), 0.0 (`"0"`), or NaN for anything else."""
    if isinstance(prediction, Mapping):
        prediction = prediction.get(_LABEL_KEY)
    if isinstance(prediction, bytes):
        prediction = prediction.decode("utf-8", errors="replace")
    if isinstance(prediction, str):
        text = prediction.strip()
        if text == constants.TARGET_YES:
            return 1.0
        if text == constants.TARGET_NO:
            return 0.0
        return math.nan
    if isinstance(prediction, (bool, int, float, np.integer, np.floating)):
        value = float(prediction)
        return value if value in (0.0, 1.0) else math.nan
    return math.nan


def _as_floats(result: dict, names: Sequence[str], kind: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in names:
        value = result.get(name)
        if value is None:
            logging.warning(
                "%s metric %s is undefined: %s", kind, name, result["reasons"].get(name)
            )
            out[name] = math.nan
        else:
            out[name] = float(value)
    return out


def probabilities(scores: Sequence[float]) -> np.ndarray:
    """exp(score) as float64, flat: P(yes) from `LabelScoringModel`'s log P(yes)."""
    return np.exp(np.asarray(scores, dtype=np.float64).reshape(-1))


def score_metrics(targets: Sequence[object], scores: Sequence[float]) -> dict[str, float]:
    """Score-mode metrics: Pearson rho and ROC-AUC of exp(score) against the gold labels.

    Args:
      targets: gold labels as the task's postprocess_fn returned them, dataset order.
      scores: per-example log P(yes) (`LabelScoringModel`; T5X's own model gives the
        log-probability of the constant target `1`); higher = more Yes.

    Returns:
      `{"pearson", "roc_auc", "n", "positive_rate"}` as floats; NaN where undefined.
    """
    labels = [label_value(t) for t in targets]
    result = stats.binary_metrics(labels, probabilities(scores))
    out = _as_floats(result, ("pearson", "roc_auc", "positive_rate"), "score")
    out["n"] = float(result["n"])
    return out


def predict_metrics(targets: Sequence[object], predictions: Sequence[object]) -> dict[str, float]:
    """Predict-mode metrics for decoded `1`/`0` answers.

    A prediction that is neither `1` nor `0` counts as wrong in `accuracy` and is left out
    of the correlation and ROC-AUC (counted in `invalid_predictions`).

    Returns:
      `{"accuracy", "pearson", "roc_auc", "n", "invalid_predictions"}` as floats.
    """
    labels = np.array([label_value(t) for t in targets], dtype=np.float64)
    answers = np.array([prediction_value(p) for p in predictions], dtype=np.float64)
    if labels.size != answers.size:
        raise ValueError(f"{labels.size} targets but {answers.size} predictions")
    valid = np.isfinite(answers)
    n_invalid = int(np.count_nonzero(~valid))
    if n_invalid:
        logging.warning("%d of %d predictions are neither '1' nor '0'", n_invalid, answers.size)
    result = stats.binary_metrics(labels[valid], answers[valid])
    out = _as_floats(result, ("pearson", "roc_auc"), "predict")
    out["accuracy"] = float(np.mean(answers == labels)) if labels.size else math.nan
    out["n"] = float(labels.size)
    out["invalid_predictions"] = float(n_invalid)
    return out
