"""`seahorse-t5x plan`: per-device memory of a train step, compiled ahead of time."""

from __future__ import annotations

import argparse
import json

from seahorse_t5x.cli import flags, inference_flags

HELP = (
    "per-device memory of an mT5 train step (or, with --scoring, a scoring batch) on a mesh, "
    "compiled ahead of time (no TPU)"
)
EXAMPLE = (
    "seahorse-t5x plan --size xxl --mesh data=2,model=16 --batch_size 64 --microbatches 32 "
    "--input_length 2048 --target_length 4 --dtype bfloat16 --extrapolate_from 1"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from seahorse_t5x import constants
    from seahorse_t5x.inference import precision
    from seahorse_t5x.model import configs

    # Not `required`: `--model`, its older spelling, may stand in for it (checked in `run`).
    parser.add_argument(
        "--size",
        metavar="SIZE",
        help=f"mT5 size: {', '.join(configs.SIZE_NAMES)} (required)",
    )
    flags.add_alias(parser, "--model", "--size")
    parser.add_argument(
        "--mesh",
        required=True,
        metavar=inference_flags.MESH_METAVAR,
        help="device mesh: batches split N ways, parameters M ways (N*M devices, simulated)",
    )
    parser.add_argument(
        "--batch_size",
        type=inference_flags.batch_size_flag,
        required=True,
        help="global rows per train step, over all devices (train's BATCH_SIZE); with "
        f"--scoring, as in score and evaluate: {inference_flags.BATCH_SIZE_HELP}",
    )
    parser.add_argument(
        "--input_length",
        type=int,
        default=constants.DEFAULT_INPUT_LENGTH,
        metavar="N",
        help="input tokens per row, EOS included (encoder length)",
    )
    parser.add_argument(
        "--target_length",
        type=int,
        default=4,
        metavar="N",
        help="target tokens per row (decoder length) of a train step",
    )
    parser.add_argument(
        "--microbatches",
        type=int,
        default=1,
        help="gradient accumulation steps each batch is split into (1: none)",
    )
    parser.add_argument(
        "--dtype",
        # `auto` is still taken, after a note (`_plan_dtype`); --help shows the other two.
        choices=precision.CHOICES,
        metavar="{" + ",".join(precision.DTYPES) + "}",
        default=inference_flags.DEFAULT_DTYPE,
        help="dtype of the model's matrix products, as in score and evaluate (bfloat16: "
        "bfloat16 operands, float32 accumulation); T5X trains mT5 with bfloat16 products: "
        "pass bfloat16 to plan such a run",
    )
    parser.add_argument(
        "--optimizer",
        choices=("adafactor", "adamw"),
        default="adafactor",
        help="optimizer whose state the train step keeps",
    )
    parser.add_argument(
        "--dropout_rate",
        type=float,
        default=0.1,
        help="dropout of the train step: 0.1 as in T5X fine-tuning; 0 for none",
    )
    depth = parser.add_mutually_exclusive_group()
    depth.add_argument(
        "--num_layers",
        type=int,
        default=None,
        help="compile with this many encoder and decoder layers (default: the size's own)",
    )
    depth.add_argument(
        "--extrapolate_from",
        type=int,
        default=None,
        metavar="L",
        help="compile a train step at L and 2L layers and extrapolate linearly per layer to "
        "the full depth (for sizes too slow to compile whole on a CPU host; default: compile "
        "the full depth, as a --scoring plan always does)",
    )
    parser.add_argument(
        "--scoring",
        action="store_true",
        help="plan a scoring batch of `score`/`evaluate` (rows = --batch_size at "
        "--input_length) instead of a train step",
    )
    parser.add_argument(
        "--param_dtype",
        choices=inference_flags.PARAM_DTYPES,
        default=inference_flags.DEFAULT_PARAM_DTYPE,
        help="with --scoring: dtype the weights are kept in on the devices (a train step keeps "
        "them in float32)",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "markdown"), default="text", help="output format"
    )


def _plan_dtype(dtype: str) -> str:
    """`--dtype`'s value. `auto`, which elsewhere chooses for the platform the command runs
    on, chose bfloat16 here (the accelerators a plan is for): deprecated, still taken as
    bfloat16 after a note."""
    from seahorse_t5x.inference import precision

    if dtype == precision.AUTO:
        flags.note_deprecated("seahorse-t5x plan", "--dtype auto", "--dtype bfloat16")
        return "bfloat16"
    return dtype


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors
    from seahorse_t5x.model import partitioning
    from seahorse_t5x.runner import plan

    if args.size is None:
        raise errors.UserError("the following arguments are required: --size")
    data, model_parallel = partitioning.parse_mesh(args.mesh)
    request = plan.PlanRequest(
        size=args.size,
        data=data,
        model_parallel=model_parallel,
        batch_size=args.batch_size,
        input_length=args.input_length,
        target_length=args.target_length,
        microbatches=args.microbatches,
        dtype=_plan_dtype(args.dtype),
        optimizer=args.optimizer,
        num_layers=args.num_layers,
        dropout_rate=args.dropout_rate,
        scoring=args.scoring,
        param_dtype=args.param_dtype,
    )
    result = plan.plan_memory(request, extrapolate_from=args.extrapolate_from)
    if args.format == "json":
        print(json.dumps(plan.to_json(result), indent=2))
    elif args.format == "markdown":
        print(plan.MARKDOWN_HEADER)
        print(plan.format_markdown_row(result))
    else:
        print(plan.format_text(result))
    return 0
