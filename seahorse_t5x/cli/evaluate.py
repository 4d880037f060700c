"""`seahorse-t5x evaluate`: P(yes) on SeqIO score tasks, score files and a metrics table."""

from __future__ import annotations

import argparse
import contextlib
import pathlib
from collections.abc import Iterator

from seahorse_t5x.cli import flags, inference_flags

HELP = "Score SeqIO score tasks with a checkpoint: score files, metrics.json, Markdown table."
EXAMPLE = (
    "seahorse-t5x evaluate --checkpoint runs/q4 --tasks seahorse_q4_score "
    "--split test --output_dir runs/q4/eval"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a MODEL_DIR of `train` (its best, else latest step), a step directory, "
        "an HF directory or a T5X checkpoint_N directory",
    )
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated score tasks or mixtures, e.g. seahorse_q4_score or "
        "seahorse_all_score",
    )
    flags.add_module(parser)
    parser.add_argument("--split", default="test", help="dataset split")
    parser.add_argument("--output_dir", required=True, help="where the results go")
    parser.add_argument("--batch_size", type=int, default=8, help=inference_flags.BATCH_SIZE_HELP)
    parser.add_argument(
        "--max_examples",
        type=int,
        default=None,
        help="score only the first N per task (default: all)",
    )
    parser.add_argument(
        "--metric",
        default=None,
        help="metric name the score files' rows carry (default: the checkpoint folder's name)",
    )
    flags.add_alias(parser, "--metric_name", "--metric")
    inference_flags.add_arguments(parser)


# The gin scope in which `--truncation` is bound for the tasks `evaluate` reads.
_TRUNCATION_SCOPE = "seahorse_t5x_evaluate"
_TRUNCATION_BINDING = "seahorse_t5x.preprocessors.configured_truncation.mode"


@contextlib.contextmanager
def _tasks_truncate(mode: str) -> Iterator[None]:
    """Inside the block, the registered tasks cut their inputs as `mode` says.

    The tasks read their truncation from gin (`preprocessors.configured_truncation`) when a
    dataset is built; the binding is scoped, so it applies to this command's datasets only
    and wins over an unscoped binding.
    """
    import gin

    from seahorse_t5x import preprocessors  # noqa: F401  (defines the configurable)

    with gin.unlock_config():
        gin.bind_parameter(f"{_TRUNCATION_SCOPE}/{_TRUNCATION_BINDING}", mode)
    with gin.config_scope(_TRUNCATION_SCOPE):
        yield


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors, fileio, input_format
    from seahorse_t5x import task_names as names
    from seahorse_t5x.inference import inputs

    if args.batch_size < 1:
        raise errors.UserError(f"--batch_size must be at least 1, got {args.batch_size}")
    if args.input_length is not None:
        input_format.check_input_length(args.input_length, "--input_length")
    checkpoint = pathlib.Path(args.checkpoint)
    if not checkpoint.exists():
        raise errors.UserError(f"--checkpoint {checkpoint} does not exist")
    fileio.check_output_path(args.output_dir, "directory", flag="--output_dir")
    mesh_shape = inference_flags.mesh_shape(args)
    words = inference_flags.label_words(args)

    import seahorse_t5x.tasks  # noqa: F401  (registers the SeqIO tasks)
    from seahorse_t5x import user_modules, vocab
    from seahorse_t5x.inference import engine as engine_lib
    from seahorse_t5x.inference import scorer as scorer_lib
    from seahorse_t5x.model import checkpoints
    from seahorse_t5x.runner import evaluation_loop

    # The user's tasks are registered before any task name is resolved (or the model loaded).
    user_modules.import_modules(args.module)
    inference_flags.enable_compilation_cache(args)
    meta = checkpoints.load_meta(checkpoint)
    input_length = scorer_lib.input_length_for(meta, args.input_length, checkpoint)
    # The order `score` uses too (vocab.RESOLUTION_ORDER), with this checkpoint.
    vocab_path = vocab.resolve_vocabulary_path(
        args.vocab, trained_with=meta.get(scorer_lib.META_VOCABULARY), checkpoint=str(checkpoint)
    )
    vocabulary = vocab.get_vocabulary(vocab_path)
    scorer_lib.warn_on_vocabulary_mismatch(meta, checkpoint, vocabulary)
    inputs.check_room_for_summary(vocabulary, input_length, "--input_length")
    mesh = inference_flags.create_mesh(mesh_shape)
    placers = []

    def placement(config):
        # Called once the checkpoint's config is read, before any weight is.
        vocab.check_fits(
            vocabulary, config.vocab_size, "use the vocabulary the model was trained with"
        )
        placers.append(engine_lib.Placer(config, mesh, args.param_dtype))
        return placers[-1]

    model_config, params = checkpoints.load_checkpoint(str(checkpoint), args.dtype, placement)
    params = placers[-1].stack_layers(params, consume=True)  # the engine's scanned layout
    task_names = evaluation_loop.expand_task_names(args.tasks.split(","))
    for named in {names.names_the_question(n) for n in task_names} - {None}:
        scorer_lib.warn_on_question_mismatch(meta, checkpoint, names_question=named)
    if words is None and all(n.startswith("ice_") for n in task_names):
        from seahorse_t5x import ice

        words = ice.ice_settings().answer_words  # what the ICE tasks' prompts ask for
    label_ids = None
    if words is not None:
        label_ids = vocab.answer_token_ids(vocabulary, words)
    name = args.metric or checkpoint.resolve().name
    # The tasks' inputs are encoded with this vocabulary too, and cut as --truncation says.
    with vocab.chosen_vocabulary(vocab_path), _tasks_truncate(args.truncation):
        results = evaluation_loop.evaluate_params(
            model_config,
            params,
            task_names,
            args.split,
            args.output_dir,
            metric_name=name,
            batch_size=args.batch_size,
            input_length=input_length,
            max_examples=args.max_examples,
            mesh=mesh,
            run_info={
                "checkpoint": str(checkpoint.resolve()),
                "title": f"{name} ({args.split})",
                "vocabulary": vocab_path,
                "truncation": args.truncation,
                "dtype": args.dtype,
                "param_dtype": args.param_dtype,
            },
            param_dtype=args.param_dtype,
            label_ids=label_ids,
        )
    print()
    print(evaluation_loop.markdown_table(results))
    print(f"results in {pathlib.Path(args.output_dir).resolve()}")
    return 0
