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
    "--split test --output_dir runs/q4/eval\n"
    "  seahorse-t5x evaluate --checkpoint runs/q4 --benchmark frank "
    "--benchmark_path frank/data --split test --output_dir runs/q4/frank"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a MODEL_DIR of `train` (its best, else latest step), a step directory, "
        "an HF directory, a T5X checkpoint_N directory, or a Hub name ORG/NAME[@REVISION] "
        "(fetched into the HF cache), e.g. google/seahorse-large-q4",
    )
    parser.add_argument(
        "--tasks",
        help="comma-separated score tasks or mixtures, e.g. seahorse_q4_score or "
        "seahorse_all_score (needed unless --benchmark is given)",
    )
    flags.add_benchmark(parser, articles=False)
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
        help="metric name the score files' rows carry (default: the checkpoint folder's "
        "name, or a Hub model's NAME)",
    )
    flags.add_alias(parser, "--metric_name", "--metric")
    inference_flags.add_arguments(parser)


# The gin scope in which `--truncation` is bound for the tasks `evaluate` reads.
_TRUNCATION_SCOPE = "seahorse_t5x_evaluate"
_TRUNCATION_BINDING = "seahorse_t5x.tasks.preprocessors.configured_truncation.mode"


@contextlib.contextmanager
def _tasks_truncate(mode: str) -> Iterator[None]:
    """Inside the block, the registered tasks cut their inputs as `mode` says.

    The tasks read their truncation from gin (`preprocessors.configured_truncation`) when a
    dataset is built; the binding is scoped, so it applies to this command's datasets only
    and wins over an unscoped binding.
    """
    import gin

    from seahorse_t5x.tasks import preprocessors  # noqa: F401  (defines the configurable)

    with gin.unlock_config():
        gin.bind_parameter(f"{_TRUNCATION_SCOPE}/{_TRUNCATION_BINDING}", mode)
    with gin.config_scope(_TRUNCATION_SCOPE):
        yield


def _benchmark_tasks(name: str, path: str | None) -> str:
    """The score tasks (a mixture) of a registered benchmark, its path bound in gin (as
    `benchmark_paths.NAME = PATH` would), so the tasks read it."""
    import gin

    from seahorse_t5x.data.benchmarks import registry

    declared = registry.get(name)
    if path is not None:
        with gin.unlock_config():
            gin.bind_parameter(f"seahorse_t5x.data.benchmarks.benchmark_paths.{name}", path)
    declared.path(path)  # a missing path is said now, before the model loads
    return declared.task_mixture


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors, fileio
    from seahorse_t5x.formats import input_format
    from seahorse_t5x.formats import task_names as names

    if args.batch_size < 1:
        raise errors.UserError(f"--batch_size must be at least 1, got {args.batch_size}")
    if args.input_length is not None:
        input_format.check_input_length(args.input_length, "--input_length")
    from seahorse_t5x.model import hub

    hub_name = hub.is_name(args.checkpoint)  # a Hub name, fetched into the HF cache below
    if not hub_name and not pathlib.Path(args.checkpoint).exists():
        raise errors.UserError(f"--checkpoint {args.checkpoint} does not exist")
    fileio.check_output_path(args.output_dir, "directory", flag="--output_dir")
    mesh_shape = inference_flags.mesh_shape(args)
    inference_flags.check_windows(args)
    words = inference_flags.label_words(args)

    import seahorse_t5x.tasks  # noqa: F401  (registers the SeqIO tasks)
    from seahorse_t5x.formats import vocab
    from seahorse_t5x.inference import inputs
    from seahorse_t5x.inference import scorer as scorer_lib
    from seahorse_t5x.scoring import evaluate
    from seahorse_t5x.tasks import user_modules

    # The user's tasks are registered before any task name is resolved (or the model loaded).
    user_modules.import_modules(args.module)
    requested = args.tasks.split(",") if args.tasks else []
    if args.benchmark:
        requested.append(_benchmark_tasks(args.benchmark, args.benchmark_path))
    elif args.benchmark_path:
        raise errors.UserError("--benchmark_path needs --benchmark NAME")
    if not requested:
        raise errors.UserError("give --tasks (e.g. seahorse_q4_score) and/or --benchmark NAME")
    task_names = evaluate.expand_task_names(requested)
    if words is None and all(n.startswith("ice_") for n in task_names):
        from seahorse_t5x.formats import ice_format

        words = ice_format.ice_settings().answer_words  # what the ICE tasks' prompts ask for
    inference_flags.enable_compilation_cache(args)
    # The one way a checkpoint is loaded for scoring, as in `score`: the vocabulary
    # (vocab.RESOLUTION_ORDER, with this checkpoint) and input length it was trained with.
    checkpoint = hub.resolve(args.checkpoint)
    scorer = scorer_lib.Scorer(
        checkpoint,
        vocab=args.vocab,
        max_input_length=args.input_length,
        batch_size=args.batch_size,
        dtype=args.dtype,
        truncation=args.truncation,
        mesh=inference_flags.create_mesh(mesh_shape),
        param_dtype=args.param_dtype,
        label_words=words,
    )
    inputs.check_room_for_summary(scorer.vocab, scorer.max_input_length, "--input_length")
    for named in {names.names_the_question(n) for n in task_names} - {None}:
        scorer_lib.warn_on_question_mismatch(scorer.meta, checkpoint, names_question=named)
    # A Hub model's snapshot folder is named by its commit: the default name is the model's.
    name = args.metric or (
        hub.parse_name(args.checkpoint)[0].split("/")[1] if hub_name else checkpoint.resolve().name
    )
    title = f"{name} ({args.split})"
    vocab_path = scorer.vocab.sentencepiece_model_file
    # The tasks' inputs are encoded with the scorer's vocabulary too, and cut as --truncation
    # says.
    with vocab.chosen_vocabulary(vocab_path), _tasks_truncate(scorer.truncation):
        results = evaluate.evaluate(
            scorer,
            task_names,
            args.split,
            args.output_dir,
            metric_name=name,
            max_examples=args.max_examples,
            window_settings=(
                evaluate.WindowSettings(args.window_overlap, args.window_aggregate)
                if args.long_inputs == "windows"
                else None
            ),
            run_info={
                "checkpoint": str(checkpoint.resolve()),
                **({"hub_name": args.checkpoint} if hub_name else {}),
                "title": title,
                "vocabulary": vocab_path,
                "truncation": args.truncation,
                "long_inputs": args.long_inputs,
                **(
                    {
                        "window_overlap": args.window_overlap,
                        "window_aggregate": args.window_aggregate,
                    }
                    if args.long_inputs == "windows"
                    else {}
                ),
                "dtype": scorer.dtype_choice.dtype,
                "param_dtype": args.param_dtype,
            },
        )
    print()
    print(evaluate.metrics_table(results, title).to_markdown())
    print(
        f"results in {pathlib.Path(args.output_dir).resolve()}, "
        f"dtype {scorer.dtype_choice.describe()}"
    )
    return 0
