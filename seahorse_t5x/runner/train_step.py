"""The one train step: mT5 forward, cross entropy with T5X's z-loss, backward, optimizer
update, optionally accumulated over microbatches, jit-compiled with explicit shardings.

A batch that carries the soft-target feature (`formats.soft_targets`, from a distillation
task) is trained on the distillation loss (`model.distillation`): the teacher's P(yes) at
the answer position, mixed with the hard loss by `DistillationSettings.alpha`.

`runner/trainer.py` runs it on real batches; `runner/plan.py` compiles it ahead of time on
abstract arrays to measure its memory. Both get it from `make_train_step`, so the plan
measures exactly the program the trainer runs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from seahorse_t5x.formats import soft_targets
from seahorse_t5x.model import distillation, mt5, partitioning

# T5X's auxiliary `z_loss * log(Z)^2` weight (keeps logits from drifting).
DEFAULT_Z_LOSS = 1e-4


@dataclasses.dataclass(frozen=True)
class DistillationSettings:
    """How a batch with soft targets is trained (`model.distillation`).

    Attributes:
      label_ids: the (yes, no) answer token ids of the output vocabulary.
      alpha: weight of the soft loss at the answer position [DISTILL_ALPHA].
      temperature: softens teacher and student alike [DISTILL_TEMPERATURE].
    """

    label_ids: tuple[int, int]
    alpha: float = 1.0
    temperature: float = 1.0


def cross_entropy_loss(
    logits: jax.Array,
    targets: jax.Array,
    weights: jax.Array,
    z_loss: float,
    soft_target_codes: jax.Array | None = None,
    distill: DistillationSettings | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Mean per-target-token cross entropy plus T5X's z-loss; with `soft_target_codes`,
    the distillation loss (`model.distillation`) instead.

    Returns:
      (objective, sums): the objective is divided by the global number of target tokens,
      so it does not depend on how the batch is split over devices. With soft targets the
      sums add `loss_sum` (the objective's numerator), `soft_ce_sum` and `answer_tokens`.
    """
    log_z = jax.nn.logsumexp(logits, axis=-1)
    target_logits = jnp.take_along_axis(logits, targets[..., None].astype(jnp.int32), axis=-1)
    token_ce = log_z - target_logits[..., 0]
    weights = weights.astype(jnp.float32)
    tokens = jnp.maximum(weights.sum(), 1.0)
    token_z = z_loss * jnp.square(log_z)
    ce_sum = (token_ce * weights).sum()
    z_sum = (token_z * weights).sum()
    correct = ((jnp.argmax(logits, -1) == targets) * weights).sum()
    sums = {"ce_sum": ce_sum, "z_sum": z_sum, "tokens": tokens, "correct": correct}
    if soft_target_codes is None:
        return (ce_sum + z_sum) / tokens, sums
    if distill is None:
        raise ValueError("a batch with soft targets needs DistillationSettings")
    soft, mask = distillation.soft_cross_entropy(
        logits, soft_target_codes, distill.label_ids, distill.temperature
    )
    mixed = distillation.mixed_token_losses(
        token_ce + token_z, soft, mask, distill.alpha, distill.temperature
    )
    sums["loss_sum"] = (mixed * weights).sum()
    sums["soft_ce_sum"] = (soft * weights).sum()
    sums["answer_tokens"] = (mask * weights).sum()
    return sums["loss_sum"] / tokens, sums


def batch_loss(
    model: mt5.MT5,
    params: Any,
    batch: Mapping[str, jax.Array],
    z_loss: float,
    dropout_rng: jax.Array | None = None,
    distill: DistillationSettings | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """`cross_entropy_loss` of the model on one batch of the runner's model features.

    Packed batches carry segment ids and positions; padded ones do not. Dropout is on when
    `dropout_rng` is given. A batch with the soft-target feature gets the distillation loss.
    """
    logits = model.apply(
        {"params": params},
        batch["encoder_input_tokens"],
        batch["decoder_input_tokens"],
        encoder_segment_ids=batch.get("encoder_segment_ids"),
        decoder_segment_ids=batch.get("decoder_segment_ids"),
        encoder_positions=batch.get("encoder_positions"),
        decoder_positions=batch.get("decoder_positions"),
        enable_dropout=dropout_rng is not None,
        rngs={} if dropout_rng is None else {"dropout": dropout_rng},
    )
    return cross_entropy_loss(
        logits,
        batch["decoder_target_tokens"],
        batch["decoder_loss_weights"],
        z_loss,
        batch.get(soft_targets.FEATURE),
        distill,
    )


@dataclasses.dataclass(frozen=True)
class StateLayout:
    """Shapes and shardings of the training state (parameters and optimizer state).

    Attributes:
      abstract_params, abstract_opt_state: `jax.ShapeDtypeStruct` trees (no shardings).
      params_sharding, opt_sharding: `NamedSharding` trees of the same structure.
    """

    abstract_params: Any
    params_sharding: Any
    abstract_opt_state: Any
    opt_sharding: Any

    def sharded_params(self) -> Any:
        """The parameters as sharded `ShapeDtypeStruct`s (restore targets, AOT inputs)."""
        return _with_shardings(self.abstract_params, self.params_sharding)

    def sharded_opt_state(self) -> Any:
        return _with_shardings(self.abstract_opt_state, self.opt_sharding)


def _with_shardings(abstract_tree: Any, shardings: Any) -> Any:
    return jax.tree.map(
        lambda leaf, sharding: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding),
        abstract_tree,
        shardings,
    )


def state_layout(
    model: mt5.MT5, optimizer: optax.GradientTransformation, mesh: Mesh
) -> StateLayout:
    """Where each parameter and optimizer-state leaf of `model` lives on `mesh`."""
    boxed = mt5.abstract_params(model.config)
    params_sharding = partitioning.params_shardings(boxed, mesh)
    abstract_params = mt5.unbox(boxed)
    abstract_opt_state = jax.eval_shape(optimizer.init, abstract_params)
    opt_sharding = partitioning.opt_state_shardings(
        abstract_opt_state, abstract_params, params_sharding, mesh
    )
    return StateLayout(abstract_params, params_sharding, abstract_opt_state, opt_sharding)


@dataclasses.dataclass
class TrainState:
    """The training state after `step` steps (`batches_consumed` input batches read)."""

    step: int
    batches_consumed: int
    params: Any
    opt_state: Any


@dataclasses.dataclass(frozen=True)
class TrainStep:
    """A compiled-on-first-call train step and the state layout it expects.

    `fn(params, opt_state, batch, step) -> (params, opt_state, metrics)`: parameters and
    optimizer state are donated; `metrics` holds `loss`, `cross_entropy`, `z_loss`,
    `accuracy`, `grad_norm` and `update_norm` (replicated scalars).
    """

    fn: Callable[..., tuple[Any, Any, dict[str, jax.Array]]]
    layout: StateLayout


def make_train_step(
    model: mt5.MT5,
    optimizer: optax.GradientTransformation,
    z_loss: float,
    microbatches: int,
    mesh: Mesh,
    seed: int = 0,
    distill: DistillationSettings | None = None,
) -> TrainStep:
    """Builds the jit-compiled train step of `model` on `mesh`.

    Args:
      model: the mT5 module (dropout at its config's rate).
      optimizer: the optax transformation (`optimizers.create_optimizer`).
      z_loss: weight of T5X's z-loss.
      microbatches: split each batch into this many equal parts along the batch axis and
        sum their gradients (T5X's gradient accumulation: one part's activations alive at a
        time); 1 = the whole batch at once. The loss is divided by the whole batch's target
        tokens either way.
      mesh: the `data` x `model` mesh; batches are split over `data`.
      seed: the dropout key of step `s` is `fold_in(PRNGKey(seed), s)` (microbatch `i` of
        it folds in `i` once more).
      distill: how batches with soft targets are trained (None: such a batch is refused).

    Returns:
      The `TrainStep` (function and state layout).
    """
    if microbatches < 1:
        raise ValueError(f"microbatches must be >= 1, got {microbatches}")
    layout = state_layout(model, optimizer, mesh)
    step_fn = functools.partial(
        train_step,
        model=model,
        optimizer=optimizer,
        z_loss=z_loss,
        microbatches=microbatches,
        mesh=mesh,
        params_sharding=layout.params_sharding,
        seed=seed,
        distill=distill,
    )
    replicated = partitioning.replicated(mesh)
    fn = jax.jit(
        step_fn,
        # One sharding for every batch feature (packed or padded): rows over `data`.
        in_shardings=(
            layout.params_sharding,
            layout.opt_sharding,
            partitioning.batch_sharding(mesh),
            replicated,
        ),
        out_shardings=(layout.params_sharding, layout.opt_sharding, replicated),
        donate_argnums=(0, 1),
    )
    return TrainStep(fn=fn, layout=layout)


def train_step(
    params: Any,
    opt_state: Any,
    batch: Mapping[str, jax.Array],
    step: jax.Array,
    *,
    model: mt5.MT5,
    optimizer: optax.GradientTransformation,
    z_loss: float,
    microbatches: int,
    mesh: Mesh,
    params_sharding: Any,
    seed: int,
    distill: DistillationSettings | None = None,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """One optimizer step on `batch` (`make_train_step` binds the keyword arguments)."""
    rng = jax.random.fold_in(jax.random.PRNGKey(seed), step)
    if microbatches == 1:
        (objective, sums), grads = gradients(model, params, batch, z_loss, rng, distill)
    else:
        (objective, sums), grads = accumulated_gradients(
            model, params, batch, z_loss, rng, microbatches, mesh, params_sharding, distill
        )
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, step_metrics(objective, sums, grads, updates)


def gradients(
    model: mt5.MT5,
    params: Any,
    batch: Mapping[str, jax.Array],
    z_loss: float,
    rng: jax.Array,
    distill: DistillationSettings | None = None,
) -> tuple[tuple[jax.Array, dict[str, jax.Array]], Any]:
    """`((objective, sums), grads)` of `batch_loss` on the whole batch at once."""

    def loss_fn(p):
        return batch_loss(model, p, batch, z_loss, rng, distill)

    return jax.value_and_grad(loss_fn, has_aux=True)(params)


def accumulated_gradients(
    model: mt5.MT5,
    params: Any,
    batch: Mapping[str, jax.Array],
    z_loss: float,
    rng: jax.Array,
    microbatches: int,
    mesh: Mesh,
    params_sharding: Any,
    distill: DistillationSettings | None = None,
) -> tuple[tuple[jax.Array, dict[str, jax.Array]], Any]:
    """`gradients`, summed over `microbatches` equal parts of `batch` in a `lax.scan`."""
    # Each microbatch still spreads over the whole data axis; gradients are summed in a
    # params-sharded accumulator. Every part's loss is scaled to the whole batch's
    # tokens, so the sum is the gradient of the whole batch's objective.
    tokens = jnp.maximum(batch["decoder_loss_weights"].astype(jnp.float32).sum(), 1.0)
    split = split_microbatches(batch, microbatches, mesh)

    def accumulate(carry, micro):
        sums, grad_sum, index = carry

        def loss_fn(p):
            _, part = batch_loss(model, p, micro, z_loss, jax.random.fold_in(rng, index), distill)
            return part.get("loss_sum", part["ce_sum"] + part["z_sum"]) / tokens, part

        (_, part), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        grad_sum = jax.lax.with_sharding_constraint(
            jax.tree.map(jnp.add, grad_sum, grads), params_sharding
        )
        sums = jax.tree.map(jnp.add, sums, part)
        return (sums, grad_sum, index + 1), None

    zero = jnp.float32(0.0)
    sums0 = {"ce_sum": zero, "z_sum": zero, "tokens": zero, "correct": zero}
    if soft_targets.FEATURE in batch:
        sums0.update(loss_sum=zero, soft_ce_sum=zero, answer_tokens=zero)
    grads0 = jax.lax.with_sharding_constraint(jax.tree.map(jnp.zeros_like, params), params_sharding)
    (sums, grads, _), _ = jax.lax.scan(accumulate, (sums0, grads0, jnp.int32(0)), split)
    sums["tokens"] = tokens
    return (sums.get("loss_sum", sums["ce_sum"] + sums["z_sum"]) / tokens, sums), grads


def split_microbatches(
    batch: Mapping[str, jax.Array], microbatches: int, mesh: Mesh
) -> Mapping[str, jax.Array]:
    """Each feature reshaped to `[microbatches, rows // microbatches, ...]`, rows over `data`."""
    return jax.tree.map(
        lambda x: jax.lax.with_sharding_constraint(
            x.reshape((microbatches, x.shape[0] // microbatches) + x.shape[1:]),
            NamedSharding(mesh, PartitionSpec(None, partitioning.DATA_AXIS)),
        ),
        batch,
    )


def step_metrics(
    objective: jax.Array, sums: Mapping[str, jax.Array], grads: Any, updates: Any
) -> dict[str, jax.Array]:
    """The step's `TrainStep` metrics from the loss sums, gradients and updates (plus
    `soft_cross_entropy`, per answer token, when the batch had soft targets)."""
    metrics = {
        "loss": objective,
        "cross_entropy": sums["ce_sum"] / sums["tokens"],
        "z_loss": sums["z_sum"] / sums["tokens"],
        "accuracy": sums["correct"] / sums["tokens"],
        "grad_norm": optax.global_norm(grads),
        "update_norm": optax.global_norm(updates),
    }
    if "soft_ce_sum" in sums:
        metrics["soft_cross_entropy"] = sums["soft_ce_sum"] / jnp.maximum(
            sums["answer_tokens"], 1.0
        )
    return metrics
