"""T5X model classes of this project: `LabelScoringModel`, SEAHORSE's P(yes) from `t5x.infer`.

T5X's `EncoderDecoderModel.score_batch` gives log P(target) over the whole vocabulary: for
the constant target `1` that is log P(`1`) + log P(EOS | `1`), not the score this project
defines. `LabelScoringModel` is that model with one method changed: its `score_batch`
returns log P(yes) of the two-way softmax over the logits of the yes and no answer tokens
(`1` and `0`, `vocab.answer_token_ids`) at the first decoder step, in float32: the
logarithm of the P(yes) that `seahorse-t5x score` computes. Decoding (`predict_batch`) is
T5X's own, and so is training (`loss_fn`) on batches without soft targets; a batch from a
distillation task (`tasks/distillation.py`, soft-target feature present) is trained on
the distillation loss (`model/distillation.py`), its hard part through T5X's own
`compute_weighted_cross_entropy` and both parts divided by T5X's loss normalizing factor.

Used from gin (`gin/runs/label_scoring.gin`, included by `runs/infer_score.gin`,
`runs/eval.gin` and `runs/finetune.gin`) over whatever model the model gin builds, so its
network, vocabulary, optimizer and feature converter stay the model gin's:

    from seahorse_t5x.model import t5x_models
    from t5x import models
    MODEL = @t5x_models.label_scoring_model()
    t5x_models.label_scoring_model.model = @models.EncoderDecoderModel()

T5X is not a dependency of this package: the module imports without it, and only using
`LabelScoringModel` (an attribute defined on first use) needs T5X installed. The two-way
log-softmax itself, `label_log_probs`, is plain JAX.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import soft_targets
from seahorse_t5x.model import distillation

# The aux value `LabelScoringModel(score_aux=True)` returns beside each score, which
# `t5x.infer` writes into each line as `"aux": {"log_p_no": ...}`: how `t5x-scores` tells
# two-way scores from T5X's whole-vocabulary log P(target).
AUX_LOG_P_NO = "log_p_no"
DEFAULT_ANSWER_WORDS: tuple[str, str] = (constants.TARGET_YES, constants.TARGET_NO)

_MODEL_CLASS = "LabelScoringModel"


def label_log_probs(logits: jax.Array, label_ids: Sequence[int]) -> jax.Array:
    """log [P(yes), P(no)] [batch, 2] (float32) from the first decoder step's logits.

    The two-way log-softmax over the logits of `label_ids` = (yes id, no id) at decoder
    position 0: log P(yes) = yes - logsumexp(yes, no).

    Args:
      logits: [batch, target_length, vocab] (T5X's `_compute_logits`) or [batch, vocab].
      label_ids: the token ids of the yes and no answers.
    """
    first = logits[:, 0, :] if logits.ndim == 3 else logits
    pair = jnp.take(first, jnp.asarray(label_ids, jnp.int32), axis=-1).astype(jnp.float32)
    return jax.nn.log_softmax(pair, axis=-1)


def _distillation_loss(
    model: Any, params: Any, batch: Mapping[str, jnp.ndarray], dropout_rng: jax.Array | None
) -> tuple[jnp.ndarray, Any]:
    """`LabelScoringModel.loss_fn` on a batch with soft targets: T5X's weighted cross-entropy
    on the hard targets (weighted by `distillation.hard_weights`) plus the soft term, with
    T5X's metrics."""
    from t5x import losses

    logits = model._compute_logits(params, batch, dropout_rng)
    factor, weights = losses.get_loss_normalizing_factor_and_weights(
        model._loss_normalizing_factor, batch
    )
    targets = batch["decoder_target_tokens"]
    if weights is None:
        weights = jnp.asarray(targets > 0, jnp.float32)
    alpha, temperature = model.distill_alpha, model.distill_temperature
    soft, mask = distillation.soft_cross_entropy(
        logits, batch[soft_targets.FEATURE], model.label_ids, temperature
    )
    loss, z_loss, _ = losses.compute_weighted_cross_entropy(
        logits,
        targets=targets,
        weights=distillation.hard_weights(weights, mask, alpha),
        label_smoothing=model._label_smoothing,
        z_loss=model._z_loss,
        loss_normalizing_factor=factor,
    )
    soft_sum = (alpha * temperature**2) * jnp.sum(soft * mask * weights)
    loss = loss + (soft_sum if factor is None else soft_sum / factor)
    segment_ids = {
        k[: -len("_segment_ids")]: v for k, v in batch.items() if k.endswith("_segment_ids")
    } or {
        k: v != 0
        for k, v in batch.items()
        if k in ("encoder_input_tokens", "decoder_target_tokens")
    }
    metrics = model._compute_metrics(
        logits=logits,
        targets=targets,
        mask=weights,
        loss=loss,
        z_loss=z_loss,
        segment_ids=segment_ids,
    )
    return loss, metrics


def _label_scores(
    model: Any, params: Any, batch: Mapping[str, jnp.ndarray], return_intermediates: bool
) -> jnp.ndarray | tuple[jnp.ndarray, Mapping[str, Any]]:
    """`LabelScoringModel.score_batch`."""
    from flax import core as flax_core

    if return_intermediates:
        logits, modified = model._compute_logits(
            params=params, batch=batch, mutable=["intermediates"]
        )
        intermediates = flax_core.unfreeze(modified.get("intermediates", {}))
    else:
        logits = model._compute_logits(params, batch)
    log_probs = label_log_probs(logits, model.label_ids)
    scores = log_probs[:, 0]
    if return_intermediates:
        intermediates.setdefault("decoder", {})
        intermediates["decoder"]["label_log_probs"] = (log_probs,)
        return scores, intermediates
    if model.score_aux:
        return scores, {AUX_LOG_P_NO: log_probs[:, 1]}
    return scores


def _set_distillation(model: Any, alpha: float, temperature: float) -> None:
    try:
        distillation.check_settings(alpha, temperature)
    except ValueError as error:
        raise errors.UserError(f"{_MODEL_CLASS}: {error}") from None
    model.distill_alpha = float(alpha)
    model.distill_temperature = float(temperature)


def _set_answers(model: Any, answer_words: Sequence[str] | str, score_aux: bool) -> None:
    from seahorse_t5x.formats import vocab as vocab_lib

    words = (
        vocab_lib.parse_answer_words(answer_words)
        if isinstance(answer_words, str)
        else vocab_lib.parse_answer_words(",".join(answer_words))
    )
    model.answer_words = words
    model.label_ids = vocab_lib.answer_token_ids(model.output_vocabulary, words)
    model.score_aux = bool(score_aux)


def _t5x_models() -> Any:
    """`t5x.models`, or an ImportError saying what to install."""
    try:
        from t5x import models
    except ImportError as error:
        raise ImportError(
            f"seahorse_t5x.model.t5x_models.{_MODEL_CLASS} is a T5X model class and needs T5X, "
            f"which seahorse-t5x does not install ({error}); install T5X as docs/tpu.md "
            "says, or score with `seahorse-t5x score`, which needs no T5X"
        ) from error
    return models


def _encoder_decoder(model: Any) -> Any:
    """`model`, refused in one line unless it is a T5X `EncoderDecoderModel`."""
    if not isinstance(model, _t5x_models().EncoderDecoderModel):
        raise errors.UserError(
            f"{_MODEL_CLASS} wraps a T5X EncoderDecoderModel, got "
            f"{type(model).__name__}: the model gin must build an encoder-decoder"
        )
    return model


def _define_model_class() -> type:
    """`LabelScoringModel`, as a subclass of T5X's `EncoderDecoderModel` (T5X imported here).

    Raises:
      ImportError: T5X is not installed, with what to install.
    """
    models = _t5x_models()

    class LabelScoringModel(models.EncoderDecoderModel):
        """T5X's `EncoderDecoderModel` whose `score_batch` gives log P(yes) (two-way, float32).

        Args (beside `EncoderDecoderModel`'s):
          answer_words: the yes and no words (default `1`, `0`; an ICE gin gives its own),
            or one "Yes,No" string; each word's token is its first piece in the output
            vocabulary (`vocab.answer_token_ids`; UserError when they share it).
          score_aux: `score_batch` also returns `{"log_p_no": ...}`, which `t5x.infer`
            writes beside each score (`runs/infer_score.gin` sets it). Leave it off for
            `t5x.eval` and training: SeqIO's score metrics take the scores alone.
          distill_alpha, distill_temperature: the distillation loss's weight and
            temperature on batches with soft targets (`model/distillation.py`).
        """

        def __init__(
            self,
            *args: Any,
            answer_words: Sequence[str] | str = DEFAULT_ANSWER_WORDS,
            score_aux: bool = False,
            distill_alpha: float = 1.0,
            distill_temperature: float = 1.0,
            **kwargs: Any,
        ) -> None:
            super().__init__(*args, **kwargs)
            _set_answers(self, answer_words, score_aux)
            _set_distillation(self, distill_alpha, distill_temperature)

        def loss_fn(
            self,
            params: Any,
            batch: Mapping[str, jnp.ndarray],
            dropout_rng: jax.Array | None,
        ) -> tuple[jnp.ndarray, Any]:
            """T5X's loss, or on a batch with soft targets the distillation loss."""
            if soft_targets.FEATURE not in batch:
                return super().loss_fn(params, batch, dropout_rng)
            return _distillation_loss(self, params, batch, dropout_rng)

        def score_batch(  # pytype: disable=signature-mismatch
            self,
            params: Any,
            batch: Mapping[str, jnp.ndarray],
            return_intermediates: bool = False,
        ) -> jnp.ndarray | tuple[jnp.ndarray, Mapping[str, Any]]:
            """log P(yes) [batch] at the first decoder step, over the yes and no tokens only
            (the targets are not read beyond their shape). Returns `(scores, aux)` with
            `score_aux` (`aux` = `{"log_p_no": [batch]}`), and `(scores, intermediates)`
            with `return_intermediates` (T5X's, plus `decoder/label_log_probs`)."""
            return _label_scores(self, params, batch, return_intermediates)

        @classmethod
        def from_model(
            cls,
            model: models.EncoderDecoderModel,
            answer_words: Sequence[str] | str = DEFAULT_ANSWER_WORDS,
            score_aux: bool = False,
            distill_alpha: float = 1.0,
            distill_temperature: float = 1.0,
        ) -> LabelScoringModel:
            """The same model (module, vocabularies, optimizer, losses, feature converter,
            decoding) with this class's `score_batch` and `loss_fn`."""
            scoring = cls.__new__(cls)
            scoring.__dict__.update(vars(_encoder_decoder(model)))
            _set_answers(scoring, answer_words, score_aux)
            _set_distillation(scoring, distill_alpha, distill_temperature)
            return scoring

    LabelScoringModel.__module__ = __name__
    LabelScoringModel.__qualname__ = _MODEL_CLASS
    return LabelScoringModel


def label_scoring_model(
    model: Any,
    answer_words: Sequence[str] | str = DEFAULT_ANSWER_WORDS,
    score_aux: bool = False,
    distill_alpha: float = 1.0,
    distill_temperature: float = 1.0,
) -> Any:
    """`model` (T5X's `EncoderDecoderModel`, as the model gin builds it) as a
    `LabelScoringModel` (`LabelScoringModel.from_model`): what the run gins bind to MODEL.

    Raises:
      ImportError: T5X is not installed.
      UserError: `model` is not an encoder-decoder, or the answer words do not fit its
        vocabulary.
    """
    return __getattr__(_MODEL_CLASS).from_model(
        model,
        answer_words=answer_words,
        score_aux=score_aux,
        distill_alpha=distill_alpha,
        distill_temperature=distill_temperature,
    )


def __getattr__(name: str) -> Any:
    # The T5X class is made on first use, so this module imports without T5X.
    if name == _MODEL_CLASS:
        cls = _define_model_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
