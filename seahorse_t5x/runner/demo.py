"""The one-command demo: synthetic data -> a small mT5-shaped metric trained on CPU ->
the SEAHORSE-style table on the demo test split.

One multi-question model (`seahorse_all`: the question is named in the input) learns all
six questions at once, which costs a sixth of six single-question models. The numbers it
reaches are on synthetic data and say nothing about SEAHORSE itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import pathlib
import time
from collections.abc import Callable
from typing import Any

import gin

from seahorse_t5x import constants, errors
from seahorse_t5x.evaluation import tables

# A small mT5-shaped model: T5.1.1 layers, relative attention, gated GELU, untied logits;
# the vocabulary is the shipped 3000-piece demo SentencePiece model (rounded up).
DEMO_MODEL: dict[str, Any] = {
    "vocab_size": 3072,
    "emb_dim": 128,
    "num_heads": 4,
    "head_dim": 32,
    "mlp_dim": 256,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
}
MIXTURE = "seahorse_all"
# The gin scope of the demo's data folder and vocabulary bindings (`_task_settings`).
_GIN_SCOPE = "seahorse_demo"

# SeqIO advice that does not apply to the demo's few thousand in-memory rows (caching them
# would take longer than reading them); every other warning still shows.
_QUIET_SEQIO_ADVICE = (
    "Using an uncached FunctionDataset for training",
    "not cached so using number of input examples",
)


class _DropSeqioAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in _QUIET_SEQIO_ADVICE)


@contextlib.contextmanager
def _quiet_seqio_advice():
    """Drops `_QUIET_SEQIO_ADVICE` from absl's logger while the demo runs."""
    drop = _DropSeqioAdvice()
    absl_logger = logging.getLogger("absl")
    absl_logger.addFilter(drop)
    try:
        yield
    finally:
        absl_logger.removeFilter(drop)


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """What the demo trains; the defaults finish in minutes on a 2-core CPU.

    Attributes:
      train_steps: optimizer steps.
      batch_size: packed rows per step.
      input_length: tokens per packed row (and the evaluation's input length). Longer
        inputs keep the summary whole and cut the article (`keep_summary`).
      target_length: target tokens per packed row (2 per packed example).
      optimizer: `adafactor` (T5X's, updates scaled by each parameter's RMS) or `adamw`.
      learning_rate: the peak learning rate.
      learning_rate_schedule: `constant` or `cosine` (see `optimizers.learning_rate_schedule`).
      warmup_steps: linear warmup from 0 to `learning_rate` (at most half the steps).
      learning_rate_multipliers: `{parameter path regex: factor}` (see
        `optimizers.scale_by_parameter_multipliers`).
      eval_period: validate (and maybe mark a new best checkpoint) every this many steps.
      validation_max_examples: validation examples per question.
      split_sizes: rows per split of the synthetic data (None: the demo's defaults).
      model: `MT5Config` fields of the demo model.
      seed: data and training seed.
      dtype: the products' dtype for training and evaluation (`auto`: float32 on CPUs,
        bfloat16 on GPUs and TPUs; `float32`; `bfloat16`).
    """

    # As many examples as 800 steps of 32 rows, in twice the updates (docs/runner.md,
    # "seahorse-t5x demo"). Training, two validations and the test evaluation take about 7
    # CPU-minutes on a 2-core CPU: 7.7 minutes of wall time at a load average of 3.5-5.
    train_steps: int = 1600
    batch_size: int = 16
    input_length: int = 128
    target_length: int = 8
    optimizer: str = "adafactor"
    learning_rate: float = 1e-2
    learning_rate_schedule: str = "cosine"
    warmup_steps: int = 30
    # Adafactor moves each parameter by about `learning_rate` times its own RMS: the
    # relative-position biases (RMS about 0.2) 10x faster learn to read neighbouring words
    # (Q2's loop, Q3's order) within the run, the token embeddings 3x faster the words that
    # mark Q4 (invented names).
    learning_rate_multipliers: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"rel_embedding": 10.0, "token_embedder": 3.0}
    )
    eval_period: int = 800
    validation_max_examples: int | None = 200
    split_sizes: dict[str, int] | None = None
    model: dict[str, Any] = dataclasses.field(default_factory=lambda: dict(DEMO_MODEL))
    seed: int = 0
    dtype: str = "auto"


def _table(results: dict[str, dict]) -> str:
    """The demo's table, numbers as every table prints them (`tables.format_value`)."""
    number = tables.format_value
    lines = [
        "| question | n | Yes rate | rho | ROC-AUC | majority rho | majority ROC |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results.values():
        q = result["question"]
        base = result["majority_baseline"]
        lines.append(
            f"| Q{q} {constants.QUESTION_NAMES[q]} | {result['n']} | "
            f"{number(result['positive_rate'])} | {number(result['pearson'])} | "
            f"{number(result['roc_auc'])} | {number(base['pearson'])} | {number(base['roc_auc'])} |"
        )
    return "\n".join(lines)


def run_demo(
    output_dir: str | os.PathLike = "seahorse_demo",
    settings: DemoSettings = DemoSettings(),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Prepares the data, trains, evaluates on the test split and prints the table.

    Args:
      output_dir: everything goes here: `data/`, `model/` (the run), `evaluation/`.
      settings: sizes and steps.
      log: receives the progress lines.

    Returns:
      `{"output_dir", "model_dir", "evaluation_dir", "results", "seconds", "best"}`.

    Raises:
      UserError: if `output_dir` holds a finished demo run of other settings.
    """
    with _quiet_seqio_advice():
        return _run_demo(output_dir, settings, log)


def _run_demo(
    output_dir: str | os.PathLike, settings: DemoSettings, log: Callable[[str], None]
) -> dict[str, Any]:
    started = time.perf_counter()
    output_dir = pathlib.Path(output_dir).absolute()
    output_dir.mkdir(parents=True, exist_ok=True)
    settings_path = output_dir / "demo_settings.json"
    settings_json = json.dumps(dataclasses.asdict(settings), indent=2, sort_keys=True)
    if settings_path.exists() and settings_path.read_text() != settings_json:
        raise errors.UserError(
            f"{output_dir} holds a demo run with other settings ({settings_path}); "
            "pass another --output_dir or delete it"
        )
    settings_path.write_text(settings_json)

    from seahorse_t5x.data import demo_data

    log("== 1/3 synthetic demo data (not SEAHORSE: templated articles and summaries) ==")
    prepared = demo_data.prepare_demo(
        str(output_dir / "data"), seed=settings.seed, log=log, split_sizes=settings.split_sizes
    )
    with _task_settings(prepared):
        return _train_and_evaluate(output_dir, settings, log, started)


@contextlib.contextmanager
def _task_settings(data_dir: str):
    """Points the SEAHORSE tasks at `data_dir` and the demo vocabulary while the demo runs.

    The tasks look both up (`seahorse.data_dir`, `vocab.vocabulary_path`) when a dataset is
    built. The demo binds them in its own gin scope, entered only here: outside it (after
    the demo, or in other code of the same process) the user's gin and environment apply
    as before, and no environment variable is written.
    """
    import seahorse_t5x.tasks  # noqa: F401  (registers the SeqIO tasks and their configurables)

    with gin.unlock_config():
        gin.bind_parameter(f"{_GIN_SCOPE}/seahorse_t5x.tasks.seahorse.data_dir.path", data_dir)
        gin.bind_parameter(f"{_GIN_SCOPE}/seahorse_t5x.formats.vocab.vocabulary_path.path", "demo")
    with gin.config_scope(_GIN_SCOPE):
        yield


def _train(model_dir: pathlib.Path, settings: DemoSettings) -> Any:
    """The demo metric trained into `model_dir` (`trainer.train`'s result)."""
    from seahorse_t5x.runner import trainer

    return trainer.train(
        model_dir=str(model_dir),
        mixture_or_task_name=MIXTURE,
        task_feature_lengths={
            "inputs": settings.input_length,
            "targets": settings.target_length,
        },
        train_steps=settings.train_steps,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        optimizer=settings.optimizer,
        learning_rate_schedule=settings.learning_rate_schedule,
        # A shorter run (`--train_steps`) warms up for at most half its steps.
        warmup_steps=min(settings.warmup_steps, settings.train_steps // 2),
        learning_rate_multipliers=settings.learning_rate_multipliers,
        dropout_rate=0.0,
        eval_period=settings.eval_period,
        random_seed=settings.seed,
        model_size="tiny",
        model_overrides=settings.model,
        dtype=settings.dtype,
        checkpoint_period=settings.eval_period or settings.train_steps,
        keep_checkpoints=1,
        validation_max_examples=settings.validation_max_examples,
        log_period=max(1, min(25, settings.train_steps // 10)),
    )


def _train_and_evaluate(
    output_dir: pathlib.Path,
    settings: DemoSettings,
    log: Callable[[str], None],
    started: float,
) -> dict[str, Any]:
    from seahorse_t5x.inference import loading
    from seahorse_t5x.inference import settings as scoring_settings
    from seahorse_t5x.runner import checkpointing
    from seahorse_t5x.scoring import evaluate

    log(f"== 2/3 training a small mT5-shaped model on {MIXTURE} (all six questions) ==")
    model_dir = output_dir / "model"
    result = _train(model_dir, settings)
    params = result.params
    best = result.best
    if best is not None and int(best["step"]) != result.step:
        store = checkpointing.CheckpointStore(model_dir, keep=1)
        params, _ = store.restore_params(int(best["step"]))
        store.close()
        log(f"using the best validation checkpoint: step {best['step']}")

    log("== 3/3 evaluating on the demo test split ==")
    evaluation_dir = output_dir / "evaluation"
    tasks = [f"seahorse_all_q{q}_score" for q in constants.QUESTIONS]
    scorer = loading.load_scorer(
        (result.model_config, params),
        scoring_settings.ScoringSettings(
            input_length=settings.input_length,
            batch_size=settings.batch_size,
            dtype=result.model_config.dtype,
            compilation_cache=False,  # the demo compiles afresh, as it always has
        ),
    )
    results = evaluate.evaluate(
        scorer,
        tasks,
        "test",
        evaluation_dir,
        metric="demo_mt5_seahorse_all",
        run_info={"title": "demo metric on the synthetic test split", "model_dir": str(model_dir)},
        log=None,
    )
    seconds = time.perf_counter() - started
    log("")
    log("SEAHORSE-style results on the synthetic demo test split (not SEAHORSE numbers):")
    log(_table(results))
    log("")
    log(f"finished in {seconds / 60:.1f} min; output folder: {output_dir}")
    return {
        "output_dir": output_dir,
        "model_dir": model_dir,
        "evaluation_dir": evaluation_dir,
        "results": results,
        "seconds": seconds,
        "best": best,
    }
