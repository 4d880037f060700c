"""The local train loop: packed SeqIO batches, a sharded jit-compiled step, orbax
checkpoints with automatic resume, periodic validation and best-checkpoint selection.

`Trainer.run` sets up the state (restored or fresh), then only steps: the step is
`train_step.make_train_step`'s, and what happens after each step (the NaN stop, logging,
validation, checkpointing) are the actions of `runner/actions.py`.

Configured with gin through `train` (T5X's macro names are bound in `gin/local/train.gin`;
the ones no file sets take `TrainConfig`'s defaults), or called directly with a
`TrainConfig`. The result depends only on the configuration and
the seed: parameters are initialised from `RANDOM_SEED`, the data order is fixed by it, and
the dropout key of step `s` is `fold_in(PRNGKey(seed), s)`; a resumed run restores the
parameters, the optimizer state and the number of batches consumed, so it ends where an
uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pathlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.evaluation import score_statistics
from seahorse_t5x.formats import vocab
from seahorse_t5x.formats.task_names import question_of_task
from seahorse_t5x.inference import loading, precision
from seahorse_t5x.model import checkpoint_layout, families, mt5, partitioning
from seahorse_t5x.model.configs import MT5Config
from seahorse_t5x.runner import actions as actions_lib
from seahorse_t5x.runner import (
    checkpointing,
    input_pipeline,
    metric_logging,
    optimizers,
    train_step,
)
from seahorse_t5x.runner.train_config import BEST_METRICS, TrainConfig
from seahorse_t5x.scoring import task_examples

log = logging.getLogger(__name__)


TrainingDiverged = actions_lib.TrainingDiverged


@dataclasses.dataclass
class TrainResult:
    """What a finished run leaves behind (`params` on the host; None in multi-host runs)."""

    model_dir: pathlib.Path
    step: int
    model_config: MT5Config
    params: Any
    final_loss: float | None
    real_token_share: float | None
    best: dict[str, Any] | None
    validation: dict[str, dict] = dataclasses.field(default_factory=dict)
    resumed_from: int | None = None


def train(
    model_dir: str,
    mixture_or_task_name: str,
    task_feature_lengths: Mapping[str, int],
    train_steps: int,
    on_step: Callable[[int, float], None] | None = None,
    **options: Any,
) -> TrainResult:
    """Trains (or resumes) a run; gin binds the arguments in `gin/local/*.gin`.

    Args:
      model_dir, mixture_or_task_name, task_feature_lengths, train_steps: see `TrainConfig`.
      on_step: called after each completed step with (step, loss), after that step's
        checkpoint (if any) is written; may raise to stop the run.
      **options: the other `TrainConfig` fields.

    Returns:
      The `TrainResult`.

    Raises:
      UserError: for a bad configuration, a MODEL_DIR holding a different model, or a loss
        that became NaN/inf (`TrainingDiverged`).
    """
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise errors.UserError(f"unknown training options {unknown}")
    config = TrainConfig(
        model_dir=model_dir,
        mixture_or_task_name=mixture_or_task_name,
        task_feature_lengths=dict(task_feature_lengths),
        train_steps=train_steps,
        **options,
    )
    return Trainer(config).run(on_step=on_step)


def default_validation_tasks(mixture_or_task_name: str) -> list[str]:
    """The `_score` variants of the training task, or of each task of the mixture."""
    import seqio

    if mixture_or_task_name in seqio.MixtureRegistry.names():
        mixture = seqio.get_mixture_or_task(mixture_or_task_name)
        names = [task.name for task in mixture.tasks]
    else:
        names = [mixture_or_task_name]
    from seahorse_t5x.tasks import distillation

    registered = set(seqio.TaskRegistry.names())
    result = []
    for name in names:
        if distillation.validation_task(name) is not None:  # the questions' human labels
            result.append(distillation.validation_task(name))
            continue
        base, _, language = name.partition(".")
        candidate = f"{base}_score" + (f".{language}" if language else "")
        if name.endswith("_score") or "_score." in name:
            candidate = name
        if candidate in registered:
            result.append(candidate)
    return sorted(result, key=lambda n: (question_of_task(n) or 0, n))


@dataclasses.dataclass
class _Run:
    """What `Trainer._set_up` builds for one run."""

    model: mt5.MT5
    step: train_step.TrainStep
    store: checkpointing.CheckpointStore
    data_config: input_pipeline.DataConfig
    state: train_step.TrainState
    resumed_from: int | None
    final_loss: float | None = None


class Trainer:
    """One training run over a mesh of all devices."""

    def __init__(self, config: TrainConfig) -> None:
        config.check()
        self.config = config
        partitioning.maybe_initialize_distributed(
            config.coordinator_address, config.num_processes, config.process_id
        )
        self.mesh = partitioning.create_mesh(
            partitioning.MeshConfig(
                model_parallel=config.model_parallel, data_parallel=config.data_parallel
            )
        )
        self.model_dir = pathlib.Path(config.model_dir).absolute()
        self.is_main_host = jax.process_index() == 0
        # The products' dtype `DTYPE` resolves to (set with the model config).
        self.dtype_choice: precision.Choice | None = None

    # --- model and state ------------------------------------------------------------------

    def _model_config_and_initial_params(self) -> tuple[MT5Config, Any | None]:
        cfg = self.config
        overrides = dict(cfg.model_overrides)
        if cfg.dtype != precision.AUTO or "dtype" not in overrides:
            self.dtype_choice = precision.choose(cfg.dtype)
            overrides["dtype"] = self.dtype_choice.dtype
        else:
            self.dtype_choice = precision.choose(overrides["dtype"])
        if cfg.initial_checkpoint_path:
            from seahorse_t5x.model import checkpoints

            model_config, params = checkpoints.load_checkpoint(cfg.initial_checkpoint_path)
            model_config = model_config.replace(dropout_rate=cfg.dropout_rate, **overrides)
            return model_config, params
        model_config = families.get(cfg.model_family).config(
            cfg.model_size, dropout_rate=cfg.dropout_rate, **overrides
        )
        return model_config, None

    def _check_vocabulary(self, model_config: MT5Config) -> None:
        vocab.check_fits(
            vocab.get_vocabulary(),
            model_config.vocab_size,
            f"pick a model size for the vocabulary {vocab.vocabulary_path()} or set "
            "model_overrides vocab_size",
        )

    # --- the run --------------------------------------------------------------------------

    def run(self, on_step: Callable[[int, float], None] | None = None) -> TrainResult:
        """Sets up the state (restored or fresh), steps to `train_steps`, and lets the
        actions log, validate, checkpoint and stop on divergence after each step."""
        cfg = self.config
        run = self._set_up()
        actions = self._actions(run, on_step)
        state = run.state
        if state.step >= cfg.train_steps:
            self._say(
                f"{self.model_dir} is already trained to step {state.step} "
                f"(TRAIN_STEPS={cfg.train_steps})"
            )
        else:
            self._loop(run, actions)
        for action in actions:
            action.close()
        run.store.close()
        logging_action = next(a for a in actions if isinstance(a, actions_lib.LogMetrics))
        validation = next((a for a in actions if isinstance(a, actions_lib.Validate)), None)
        # Across hosts no process holds every shard; the checkpoints are the result there.
        host_params = jax.device_get(state.params) if jax.process_count() == 1 else None
        return TrainResult(
            model_dir=self.model_dir,
            step=state.step,
            model_config=run.model.config,
            params=host_params,
            final_loss=run.final_loss,
            real_token_share=logging_action.real_token_share,
            best=run.store.best(),
            validation=validation.last if validation is not None else {},
            resumed_from=run.resumed_from,
        )

    def _set_up(self) -> _Run:
        """The model, optimizer, step function, checkpoint store and the starting state."""
        cfg = self.config
        model_config, initial_params = self._model_config_and_initial_params()
        self._check_vocabulary(model_config)
        model = families.build(model_config)
        optimizer = optimizers.create_optimizer(
            cfg.optimizer,
            cfg.learning_rate,
            cfg.weight_decay,
            schedule=cfg.learning_rate_schedule,
            warmup_steps=cfg.warmup_steps,
            total_steps=cfg.train_steps,
            learning_rate_multipliers=dict(cfg.learning_rate_multipliers),
            clip_gradient_norm=cfg.clip_gradient_norm,
        )
        distill = train_step.DistillationSettings(
            label_ids=tuple(vocab.label_token_ids(vocab.get_vocabulary())),
            alpha=cfg.distill_alpha,
            temperature=cfg.distill_temperature,
        )
        step = train_step.make_train_step(
            model,
            optimizer,
            cfg.z_loss,
            microbatches=1,
            mesh=self.mesh,
            seed=cfg.random_seed,
            distill=distill,
        )
        layout = step.layout
        store = checkpointing.CheckpointStore(
            self.model_dir, keep=cfg.keep_checkpoints, best_metric=cfg.best_metric
        )
        data_config = input_pipeline.DataConfig(
            mixture_or_task_name=cfg.mixture_or_task_name,
            task_feature_lengths=cfg.task_feature_lengths,
            batch_size=cfg.batch_size,
            seed=cfg.random_seed,
            pack=cfg.pack,
        )
        input_pipeline.check_data_config(data_config)
        saved = store.latest_meta()
        if saved is not None:
            # Before any array is restored: a model of other shapes would not read back.
            at_step, meta = saved
            self._check_model(meta, model_config, store.step_dir(at_step))
            self._check_optimizer_settings(meta, self._optimizer_settings())
        restored = store.restore_latest(layout.sharded_params(), layout.sharded_opt_state())
        resumed_from = None
        if restored is not None:
            at_step, params, opt_state, data_state, meta = restored
            self._check_resumable(
                meta, data_state, model_config, data_config, store.step_dir(at_step)
            )
            state = train_step.TrainState(
                at_step, int(data_state["batches_consumed"]), params, opt_state
            )
            resumed_from = at_step
            self._say(f"resuming from {store.step_dir(at_step)} (step {at_step})")
        else:
            if initial_params is None:
                init = jax.jit(
                    lambda rng: mt5.unbox(mt5.init_params(model_config, rng)),
                    out_shardings=layout.params_sharding,
                )
                params = init(jax.random.PRNGKey(cfg.random_seed))
            else:
                params = jax.device_put(initial_params, layout.params_sharding)
            opt_state = jax.jit(optimizer.init, out_shardings=layout.opt_sharding)(params)
            state = train_step.TrainState(0, 0, params, opt_state)
        return _Run(model, step, store, data_config, state, resumed_from)

    def _actions(
        self, run: _Run, on_step: Callable[[int, float], None] | None
    ) -> list[actions_lib.Action]:
        """What happens after each step, in order: the NaN stop first (nothing of a bad step
        is logged or saved), then logging, validation, checkpointing and `on_step`."""
        cfg = self.config
        checkpoint = actions_lib.Checkpoint(
            run.store,
            run.data_config,
            self._checkpoint_meta(run.model.config),
            period=cfg.checkpoint_period,
            train_steps=cfg.train_steps,
            best_metric=cfg.best_metric,
            last_saved=run.resumed_from,
            say=self._say,
        )
        validation_tasks = (
            default_validation_tasks(cfg.mixture_or_task_name)
            if cfg.validation_tasks is None
            else list(cfg.validation_tasks)
        )
        writer = (
            metric_logging.create_writer(self.model_dir, "train") if self.is_main_host else None
        )
        rate_at = optimizers.learning_rate_schedule(
            cfg.learning_rate, cfg.learning_rate_schedule, cfg.warmup_steps, cfg.train_steps
        )
        actions: list[actions_lib.Action] = [
            actions_lib.StopOnNonFinite(checkpoint),
            actions_lib.LogMetrics(
                writer,
                metric_logging.ProgressLine(cfg.train_steps),
                cfg.log_period,
                cfg.train_steps,
                rate_at,
            ),
        ]
        if validation_tasks:
            validator = _Validator(self, run.model, validation_tasks)
            actions.append(actions_lib.Validate(validator, cfg.eval_period, cfg.train_steps))
        actions.append(checkpoint)
        if on_step is not None:
            actions.append(actions_lib.CallBack(on_step))
        return actions

    def _checkpoint_meta(self, model_config: MT5Config) -> dict[str, Any]:
        from seahorse_t5x.tasks import distillation
        from seahorse_t5x.tasks import ratings as rating_tasks

        cfg = self.config
        meta = {
            "model_config": model_config.to_dict(),
            checkpoint_layout.META_VOCABULARY: vocab.vocabulary_path(),
            checkpoint_layout.META_VOCABULARY_SHA256: vocab.file_sha256(vocab.vocabulary_path()),
            "mixture_or_task_name": cfg.mixture_or_task_name,
            # `score` and `evaluate` default to the lengths the model was trained with.
            "task_feature_lengths": dict(cfg.task_feature_lengths),
            "optimizer": self._optimizer_settings(),
        }
        # What the inputs were (`formats.trained_inputs`): a distillation task's are a
        # SEAHORSE task's or a rating set's, a rating set's multi-question inputs name each
        # question by its prompt. `score` reads them here, where neither set is registered.
        meta.update(
            distillation.inputs_meta(cfg.mixture_or_task_name)
            or rating_tasks.inputs_meta(cfg.mixture_or_task_name)
        )
        return meta

    def _loop(self, run: _Run, actions: Sequence[actions_lib.Action]) -> None:
        cfg = self.config
        mesh = self.mesh
        state = run.state
        self._say(
            f"training {cfg.mixture_or_task_name} on mesh data={mesh.shape['data']} "
            f"model={mesh.shape['model']} ({jax.device_count()} devices), steps {state.step}"
            f"->{cfg.train_steps}, batch {cfg.batch_size}, "
            f"{'packed' if cfg.pack else 'padded'} {dict(cfg.task_feature_lengths)}, "
            f"{self.dtype_choice.describe()} products"
        )
        batches = input_pipeline.train_batches(run.data_config, start_batch=state.batches_consumed)
        for action in actions:
            action.start(state)
        with mesh, nn.logical_axis_rules(partitioning.LOGICAL_AXIS_RULES):
            while state.step < cfg.train_steps:
                try:
                    local_batch = next(batches)
                except StopIteration as e:  # num_epochs=None: only an empty task ends
                    raise errors.UserError(
                        f"{cfg.mixture_or_task_name} yielded no training batches"
                    ) from e
                real, total = input_pipeline.real_token_counts(local_batch)
                targets = input_pipeline.target_token_count(local_batch)
                batch = partitioning.global_batch(local_batch, mesh)
                state.params, state.opt_state, metrics = run.step.fn(
                    state.params, state.opt_state, batch, jnp.asarray(state.step, jnp.int32)
                )
                outcome = actions_lib.StepOutcome(
                    loss=float(metrics["loss"]),
                    update_norm=float(metrics["update_norm"]),
                    metrics=metrics,
                    real_tokens=real,
                    slots=total,
                    target_tokens=targets,
                )
                state.step += 1
                state.batches_consumed += 1
                for action in actions:
                    action.after_step(state, outcome)
                run.final_loss = outcome.loss

    def _optimizer_settings(self) -> dict[str, Any]:
        """The settings that shape the optimizer state (saved in each checkpoint's meta)."""
        cfg = self.config
        return {
            "optimizer": cfg.optimizer,
            "learning_rate_schedule": cfg.learning_rate_schedule,
            "warmup_steps": cfg.warmup_steps,
            "learning_rate_multipliers": dict(cfg.learning_rate_multipliers),
            "clip_gradient_norm": cfg.clip_gradient_norm,
        }

    def _check_optimizer_settings(
        self, meta: Mapping[str, Any], settings: Mapping[str, Any]
    ) -> None:
        """Raises UserError when MODEL_DIR's run (its newest step's `meta`) used other
        optimizer settings.

        Their optimizer states differ in structure (or in meaning), so the run could not be
        resumed faithfully. Checkpoints written before the settings were saved pass.
        """
        saved = meta.get("optimizer")
        if saved is None:
            return
        # JSON turns the multipliers' keys into strings and keeps floats: compare as JSON.
        current = json.loads(json.dumps(settings))
        changed = sorted(k for k in current if saved.get(k) != current[k])
        if changed:
            details = ", ".join(f"{k}: saved {saved.get(k)!r}, now {current[k]!r}" for k in changed)
            raise errors.UserError(
                f"{self.model_dir} holds a run trained with other optimizer settings "
                f"({details}); resume with the saved settings, or use a new MODEL_DIR "
                "(INITIAL_CHECKPOINT_PATH can start from its weights)"
            )

    def _check_model(
        self, meta: Mapping[str, Any], model_config: MT5Config, step_dir: pathlib.Path
    ) -> None:
        """Raises UserError when the step's `meta` records another model configuration.

        The products' dtype is how the model is computed, not which model it is: a run may be
        resumed in the other dtype (on another platform, say), with a warning.
        """
        saved = meta.get(checkpoint_layout.META_MODEL_CONFIG)
        if saved is None:
            return
        current = model_config.to_dict()
        changed = sorted(k for k in saved if k != "dtype" and saved.get(k) != current.get(k))
        if changed:
            raise errors.UserError(
                f"{step_dir} holds a model that differs from this configuration in {changed}; "
                "use a new MODEL_DIR (or INITIAL_CHECKPOINT_PATH to start from it)"
            )

    def _check_resumable(
        self,
        meta: Mapping[str, Any],
        data_state: Mapping[str, Any],
        model_config: MT5Config,
        data_config: input_pipeline.DataConfig,
        step_dir: pathlib.Path,
    ) -> None:
        self._check_model(meta, model_config, step_dir)
        saved_dtype = meta.get(checkpoint_layout.META_MODEL_CONFIG, {}).get("dtype")
        if saved_dtype not in (None, model_config.dtype):
            log.warning(
                "resuming %s, trained so far with %s products, with %s products: the steps "
                "after the restored one differ from those of an uninterrupted run",
                step_dir,
                saved_dtype,
                model_config.dtype,
            )
        expected = data_config.to_json()
        differing = sorted(k for k in expected if data_state.get(k) != expected[k])
        if differing:
            log.warning(
                "resuming %s with changed data settings %s: the batches after the restored "
                "step differ from those of an uninterrupted run",
                step_dir,
                differing,
            )

    def _say(self, message: str) -> None:
        if self.is_main_host:
            print(message, flush=True)


class _Validator:
    """Scores the validation tasks and averages the chosen metric over them."""

    def __init__(self, trainer: Trainer, model: mt5.MT5, task_names: Sequence[str]) -> None:
        cfg = trainer.config
        self.trainer = trainer
        self.input_length = int(cfg.task_feature_lengths["inputs"])
        self.examples = [
            task_examples.load_task_examples(
                name, cfg.validation_split, self.input_length, cfg.validation_max_examples
            )
            for name in task_names
        ]
        # The one inference path, as `score` and `evaluate`; the parameters are the training
        # state's, already sharded on the same mesh with the same rules.
        self.engine = loading.build_engine(
            model.config,
            vocab.label_token_ids(vocab.get_vocabulary()),
            trainer.mesh,
            self.input_length,
            cfg.eval_batch_size,
            # The same inputs at every validation: the fine ladder's compiles pay back.
            ladder="1.2",
        )
        self.writer = (
            metric_logging.create_writer(trainer.model_dir, "validation")
            if trainer.is_main_host
            else None
        )

    def run(self, params: Any, step: int) -> tuple[dict[str, dict], dict[str, float]]:
        started = time.perf_counter()
        results: dict[str, dict] = {}
        scalars: dict[str, float] = {}
        for examples in self.examples:
            scores = self.engine.p_yes(params, examples.tokens)
            result = score_statistics.task_metrics(examples.labels, scores)
            result["question"] = examples.question
            results[examples.task_name] = result
            for name in BEST_METRICS:
                if result[name] is not None:
                    scalars[f"{examples.task_name}/{name}"] = result[name]
        summary = {}
        for name in BEST_METRICS:
            values = [r[name] for r in results.values() if r[name] is not None]
            if values:
                summary[name] = float(np.mean(values))
        scalars.update({f"mean/{k}": v for k, v in summary.items()})
        if self.writer is not None:
            self.writer.write_scalars(step, scalars)
            self.writer.flush()
        shown = "  ".join(f"{k} {v:.4f}" for k, v in summary.items())
        self.trainer._say(
            f"step {step}: validation on {len(results)} tasks: {shown} "
            f"({time.perf_counter() - started:.1f}s)"
        )
        return results, summary

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
