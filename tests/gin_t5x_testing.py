"""What the T5X gin tests know of T5X, which is not installable here.

The gin files under gin/{models,runs,experiments} include T5X's own gin files and bind T5X
configurables. The facts below were read from T5X's sources (google-research/t5x, 2026-04:
t5x/configs/runs/{finetune,eval,infer}.gin, t5x/examples/t5/mt5/*.gin, and the signatures
of the configurables, t5x/decoding.py's temperature_sample among them) and are checked against the files textually, with gin's own parser.
"""

from __future__ import annotations

import dataclasses
import pathlib

from gin import config_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
GIN_DIR = ROOT / "seahorse_t5x" / "gin"
T5X_GIN_DIRS = ("models", "runs", "experiments", "smoke")
SIZES = ("small", "base", "large", "xl", "xxl")

REQUIRED = "gin.REQUIRED"


@dataclasses.dataclass(frozen=True)
class T5xGin:
    """A T5X gin file: the macros it sets, REQUIRED or to a default value."""

    required: tuple[str, ...]
    defaults: dict[str, object]


_MT5_MODEL = T5xGin(
    required=("DROPOUT_RATE",),
    defaults={
        "Z_LOSS": 0.0001,
        "LABEL_SMOOTHING": 0.0,
        "LOSS_NORMALIZING_FACTOR": None,
        "VOCABULARY": ("@", "seqio.SentencePieceVocabulary", True),
        "OPTIMIZER": ("@", "adafactor.Adafactor", True),
        "MODEL": ("@", "models.EncoderDecoderModel", True),
    },
)
T5X_GINS: dict[str, T5xGin] = {
    "t5x/configs/runs/finetune.gin": T5xGin(
        required=(
            "MODEL_DIR",
            "MIXTURE_OR_TASK_NAME",
            "TASK_FEATURE_LENGTHS",
            "TRAIN_STEPS",
            "INITIAL_CHECKPOINT_PATH",
        ),
        defaults={
            "DROPOUT_RATE": 0.1,
            "USE_CACHED_TASKS": True,
            "BATCH_SIZE": 128,
            "EVAL_STEPS": 20,
            "EVAL_PERIOD": 1000,
            "EVALUATOR_USE_MEMORY_CACHE": True,
            "EVALUATOR_NUM_EXAMPLES": None,
            "JSON_WRITE_N_RESULTS": None,
            "USE_HARDWARE_RNG": False,
            "RANDOM_SEED": None,
            "TRAIN_STEPS_RELATIVE": None,
            "MIXTURE_OR_TASK_MODULE": None,
        },
    ),
    "t5x/configs/runs/eval.gin": T5xGin(
        required=("MIXTURE_OR_TASK_NAME", "CHECKPOINT_PATH", "EVAL_OUTPUT_DIR"),
        defaults={"TASK_FEATURE_LENGTHS": None, "MIXTURE_OR_TASK_MODULE": None},
    ),
    "t5x/configs/runs/infer.gin": T5xGin(
        required=(
            "MIXTURE_OR_TASK_NAME",
            "TASK_FEATURE_LENGTHS",
            "CHECKPOINT_PATH",
            "INFER_OUTPUT_DIR",
        ),
        defaults={"MIXTURE_OR_TASK_MODULE": None},
    ),
    **{f"t5x/examples/t5/mt5/{size}.gin": _MT5_MODEL for size in SIZES},
}

# T5X configurables this project binds, with their parameters (from their signatures).
T5X_CONFIGURABLES: dict[str, tuple[str, ...]] = {
    "t5x.utils.DatasetConfig": (
        "mixture_or_task_name",
        "task_feature_lengths",
        "split",
        "batch_size",
        "shuffle",
        "seed",
        "use_cached",
        "pack",
        "use_custom_packing_ops",
        "module",
        "use_memory_cache",
        "trim_output_features",
        "runtime_preprocessors",
        "num_prefetch_threads",
        "num_workers",
    ),
    "t5x.utils.SaveCheckpointConfig": (
        "dtype",
        "period",
        "checkpoint_steps",
        "keep",
        "keep_dataset_checkpoints",
        "save_dataset",
        "checkpointer_cls",
        "state_transformation_fns",
        "checkpoint_manager_cls",
    ),
    "t5x.utils.RestoreCheckpointConfig": (
        "path",
        "mode",
        "assignment_map",
        "strict",
        "fallback_to_scratch",
        "dtype",
        "restore_dataset",
        "checkpointer_cls",
        "state_transformation_fns",
        "checkpoint_manager_cls",
    ),
    "t5x.utils.create_learning_rate_scheduler": (
        "factors",
        "base_learning_rate",
        "warmup_steps",
        "decay_factor",
        "steps_per_decay",
        "steps_per_cycle",
        "step_offset",
        "min_learning_rate",
    ),
    "t5x.partitioning.PjitPartitioner": (
        "num_partitions",
        "model_parallel_submesh",
        "params_on_devices",
        "backend",
        "ici_mesh_shape",
        "dcn_mesh_shape",
        "logical_axis_rules",
    ),
    "t5x.trainer.Trainer": ("learning_rate_fn", "num_microbatches", "weight_metrics_computer"),
    "t5x.checkpoints.SaveBestCheckpointer": (
        "keep",
        "metric_name_to_monitor",
        "metric_mode",
        "keep_checkpoints_without_metrics",
        "force_keep_period",
        "keep_dataset_checkpoints",
    ),
    "t5x.checkpoints.OrbaxCheckpointManagerInterface": (
        "keep",
        "period",
        "force_keep_period",
        "metric_name_to_monitor",
        "metric_mode",
        "keep_checkpoints_without_metrics",
    ),
    "t5x.models.EncoderDecoderModel": (
        "module",
        "input_vocabulary",
        "output_vocabulary",
        "optimizer_def",
        "decode_fn",
        "feature_converter_cls",
        "label_smoothing",
        "z_loss",
        "loss_normalizing_factor",
        "default_decoder_params",
    ),
    "t5x.examples.t5.network.T5Config": (
        "vocab_size",
        "dtype",
        "emb_dim",
        "num_heads",
        "num_encoder_layers",
        "num_decoder_layers",
        "head_dim",
        "mlp_dim",
        "mlp_activations",
        "dropout_rate",
        "logits_via_embedding",
    ),
    "seqio.SentencePieceVocabulary": (
        "sentencepiece_model_file",
        "extra_ids",
        "normalizer_spec_overrides",
        "reverse_extra_ids",
        "use_fast_tokenizer",
    ),
    "t5x.decoding.temperature_sample": (
        "inputs",
        "cache",
        "tokens_to_logits",
        "eos_id",
        "decode_rng",
        "num_decodes",
        "temperature",
        "topk",
        "topp",
        "cache_offset",
        "initial_index",
        "max_decode_steps",
        "max_decode_steps_hard_limit",
        "rescale_log_probs",
        "state_callback_fn",
        "logit_callback_fn",
    ),
    # `import __main__ as infer_script` in a gin file run by `python -m t5x.infer`.
    "__main__.infer": ("mode", "checkpoint_period", "shard_id", "num_shards", "use_orbax"),
    "__main__.train": (
        "eval_period",
        "eval_steps",
        "random_seed",
        "use_orbax",
        "total_steps",
        "train_eval_dataset_cfg",
    ),
}
# The modes of t5x/infer.py.
T5X_INFER_MODES = ("predict", "score", "predict_with_aux")


class _Values(config_parser.ParserDelegate):
    """Keeps references and macros as tagged tuples instead of resolving them."""

    def configurable_reference(self, scoped_name: str, evaluate: bool):
        return ("@", scoped_name, evaluate)

    def macro(self, macro_name: str):
        return ("%", macro_name)


def statements(path: pathlib.Path) -> list:
    """gin's own parse of one file: Import/Include/Binding/BlockDeclaration statements."""
    parser = config_parser.ConfigParser(path.read_text(encoding="utf-8"), _Values())
    return list(parser)


def is_macro(value, name: str | None = None) -> bool:
    return isinstance(value, tuple) and value[:1] == ("%",) and name in (None, value[1])


@dataclasses.dataclass
class Resolved:
    """The effect of a gin file and its includes, in order.

    Attributes:
      macros: macro -> last bound value (("%", "gin.REQUIRED") when still required).
      bindings: (scope, full selector, parameter) -> last bound value.
      includes: every included file, depth first, in order.
      imports: module names imported (aliases resolved in `bindings`' selectors).
    """

    macros: dict = dataclasses.field(default_factory=dict)
    bindings: dict = dataclasses.field(default_factory=dict)
    includes: list = dataclasses.field(default_factory=list)
    imports: set = dataclasses.field(default_factory=set)


def resolve(path: pathlib.Path, into: Resolved | None = None) -> Resolved:
    """Follows includes (this repository's files parsed, T5X's emulated by `T5X_GINS`) and
    records macros and bindings as gin would apply them (later wins).

    Raises:
      AssertionError: for an include that is neither in this repository nor known T5X,
        or a binding whose module is not imported in that file.
    """
    state = into or Resolved()
    aliases: dict[str, str] = {}
    for statement in statements(path):
        if isinstance(statement, config_parser.IncludeStatement):
            name = statement.filename
            state.includes.append(name)
            if name in T5X_GINS:
                t5x_gin = T5X_GINS[name]
                for macro in t5x_gin.required:
                    state.macros[macro] = ("%", REQUIRED)
                state.macros.update(t5x_gin.defaults)
                state.imports.update(("t5x.utils", "t5x.partitioning", "seqio"))
            else:
                local = ROOT / name
                assert local.is_file(), f"{path}: include {name!r} is neither T5X's nor here"
                resolve(local, state)
        elif isinstance(statement, config_parser.ImportStatement):
            module = statement.module
            if statement.is_from:
                short = statement.alias or module.rsplit(".", 1)[1]
            else:
                short = statement.alias or module
            aliases[short] = module
            state.imports.add(module)
        elif isinstance(statement, config_parser.BindingStatement):
            if not statement.arg_name:
                state.macros[statement.selector] = statement.value
                continue
            head, _, rest = statement.selector.partition(".")
            if head in aliases:
                full = f"{aliases[head]}.{rest}"
            else:
                # A dotted module path imported whole (`import seahorse_t5x.tasks`).
                full = statement.selector
            key = (statement.scope, full, statement.arg_name)
            state.bindings[key] = statement.value
    return state
