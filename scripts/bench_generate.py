"""Generation speed: tokens generated per second by greedy decoding with this project's
`inference.generation.Generator` against HF transformers `generate` and CTranslate2
`translate_batch`, float32, on a CPU; fills PERFORMANCE.md's "Generation (greedy, float32) on
a CPU" table.

One random-weight model of mT5-small's shape (HF `MT5Config`: d_model 512, d_ff 1024, 8 + 8
layers, 6 heads, d_kv 64, vocabulary 250,112), saved as an HF checkpoint: ours loads it as a
user does (`Generator(directory, input_length=, max_output_length=, batch_size=,
dtype="float32")`, one JAX device, `generate_ids`), HF runs the torch model it was saved
from (`generate(do_sample=False, num_beams=1, max_new_tokens=N)`), CTranslate2 the model its
transformers converter wrote (`bench_score.convert_to_ct2`; `beam_size=1,
max_decoding_length=N`, `--ct2` compute types: float32, and int8 as an extra column).

Every system writes exactly `--max_output_length` tokens for every input: the model can
never choose EOS. Residual dimension `FIXED_DIM` of the decoder is held at 1 (that column of
the shared embedding is 1, the decoder's output projections write 0 into it), so it is
positive after the final RMS norm, and EOS's row of the untied output projection is -100
times that dimension's unit vector: its logit is always negative, while the largest of
250,111 others is always positive. The other rows are the embedding's rows permuted, so
greedy outputs are varied text (each token leads to another), not one token repeated. The
run checks the token counts and reports the fraction of rows where ours equals HF (and
CTranslate2 float32) token for token.

Batches: ours plans its own (`Generator`: longest first, padded to the 1.4x bucket ladder,
`--batch_size` rows at `--input_length`, more rows at shorter buckets); HF and CTranslate2
are given the very same batches (each padded to its own longest input), so every system
decodes the same rows together. Inputs are `bench_common.draw_inputs` (news-like lengths
clipped to [--min_length, --max_length]). Ours is timed on a first run (every shape traced
and compiled, no persistent cache; the compile time JAX reports is counted separately),
then every system alternates batch by batch (`--rounds` passes, the order rotating) to
share the machine's load.

`--profile` times, on the plan's most common batch shape, where ours spends a batch: the
encoder alone, the whole program, and the vocabulary projection with its argmax
(`[rows, 512] @ [512, 250112]`, once per generated token) in XLA, in PyTorch, and through
ours' int8 screen (`decoding.screened_argmax`, what `Generator` runs on a CPU).

    python scripts/bench_generate.py --num_examples 64 --max_output_length 128 --profile
    python scripts/bench_generate.py --num_examples 32 --max_output_length 256
    python scripts/bench_generate.py --num_examples 64 --batch_size 32
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from bench_common import draw_inputs, matmul_ceiling, report_results  # scripts/ on sys.path
from bench_score import convert_to_ct2, cpu_model

from seahorse_t5x.inference import batching, generation
from seahorse_t5x.model import configs, decoding, families, layers

# The decoder's residual dimension held at 1, and the weight of EOS's logit on it.
FIXED_DIM = 0
EOS_WEIGHT = -100.0
# The output projection's rows kept when `--profile` times generation without most of it.
SMALL_VOCAB = 1024
# JAX's events for the time spent tracing, lowering and compiling a program.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num_examples", type=int, default=64)
    parser.add_argument("--min_length", type=int, default=100)
    parser.add_argument("--max_length", type=int, default=1000, help="longest input drawn")
    parser.add_argument("--median_length", type=float, default=450.0)
    parser.add_argument("--input_length", type=int, default=generation.DEFAULT_INPUT_LENGTH)
    parser.add_argument("--max_output_length", type=int, default=128)
    parser.add_argument(
        "--batch_size",
        type=int,
        default=generation.DEFAULT_BATCH_SIZE,
        help="ours: rows at --input_length (Generator's batch_size); the peers run ours' batches",
    )
    parser.add_argument("--ct2", default="float32,int8", help="CTranslate2 compute types")
    parser.add_argument("--skip_hf", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="timed passes over the batches")
    parser.add_argument("--profile", action="store_true", help="where ours spends a batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args(argv)
    if args.max_length > args.input_length:
        parser.error("--max_length must be at most --input_length")
    return args


def model_without_eos(seed: int):
    """A random HF mT5-small-shaped model (untied output projection) whose greedy output
    never holds EOS (the module docstring says how)."""
    import torch
    import transformers

    config = configs.get_config("small", dropout_rate=0.0)
    hf_config = transformers.MT5Config(
        **configs.to_hf_config(config),
        tie_word_embeddings=False,
        pad_token_id=decoding.PAD_ID,
        eos_token_id=decoding.EOS_ID,
        decoder_start_token_id=decoding.DECODER_START_ID,
    )
    torch.manual_seed(seed)
    model = transformers.MT5ForConditionalGeneration(hf_config).eval()
    with torch.no_grad():
        shared = model.shared.weight
        shared[:, FIXED_DIM] = 1.0
        for block in model.decoder.block:
            block.layer[0].SelfAttention.o.weight[FIXED_DIM] = 0.0
            block.layer[1].EncDecAttention.o.weight[FIXED_DIM] = 0.0
            block.layer[2].DenseReluDense.wo.weight[FIXED_DIM] = 0.0
        order = torch.randperm(hf_config.vocab_size, generator=torch.Generator().manual_seed(seed))
        head = shared[order].clone()
        head[decoding.EOS_ID] = 0.0
        head[decoding.EOS_ID, FIXED_DIM] = EOS_WEIGHT
        model.lm_head.weight = torch.nn.Parameter(head)
    return model


class HFGenerator:
    """HF `generate`, greedy, on given batches (each padded to its longest input)."""

    def __init__(self, model, max_new_tokens: int):
        self.model = model
        self.max_new_tokens = max_new_tokens

    def generate(self, batch: list[np.ndarray]) -> list[list[int]]:
        import torch

        width = max(len(t) for t in batch)
        array = np.zeros((len(batch), width), np.int64)
        for row, ids in enumerate(batch):
            array[row, : len(ids)] = ids
        input_ids = torch.from_numpy(array)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=(input_ids != 0).long(),
                do_sample=False,
                num_beams=1,
                max_new_tokens=self.max_new_tokens,
            )
        return decoding.strip(out[:, 1:].numpy())  # after the decoder start id


class CT2Generator:
    """CTranslate2 `translate_batch`, greedy, one call per batch (its rows decoded together)."""

    def __init__(self, directory: str, vocabulary, compute_type: str, max_length: int):
        import ctranslate2

        self.translator = ctranslate2.Translator(
            os.path.join(directory, "ct2"),
            device="cpu",
            compute_type=compute_type,
            intra_threads=os.cpu_count() or 1,
        )
        self.names = vocabulary.tokens
        self.ids = vocabulary.get_vocab()
        self.max_length = max_length

    def generate(self, batch: list[np.ndarray]) -> list[list[int]]:
        results = self.translator.translate_batch(
            [[self.names[i] for i in ids] for ids in batch],
            beam_size=1,
            max_decoding_length=self.max_length,
            max_input_length=0,  # its default cuts inputs at 1024 tokens
        )
        return [[self.ids[t] for t in r.hypotheses[0]] for r in results]


class CompileClock:
    """Seconds JAX reports tracing, lowering and compiling programs, while `counting`."""

    def __init__(self):
        self.seconds = 0.0
        self.counting = False
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event: str, duration: float, **_) -> None:
        if self.counting and event in COMPILE_EVENTS:
            self.seconds += duration


def agreement(ours: list[list[int]], theirs: list[list[int]]) -> dict:
    """Rows equal token for token, and the mean share of each row's tokens before the first
    difference."""
    same = [a == b for a, b in zip(ours, theirs, strict=True)]
    prefix = []
    for a, b in zip(ours, theirs, strict=True):
        n = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        prefix.append(n / max(len(a), 1))
    return {
        "rows_equal": round(float(np.mean(same)), 3),
        "mean_prefix": round(float(np.mean(prefix)), 3),
    }


def profile(generator, hf_model, tokens, batches, max_length: int) -> dict:
    """Where each engine spends a batch of the plan's most common shape (best of 3):
    the encoder alone, the whole generation, and the same generation with the output
    projection cut to `SMALL_VOCAB` rows (the difference: the 250,112-wide projection and
    its argmax, once per token); and the projection alone, XLA against PyTorch."""
    import torch

    shapes = [(b.rows, b.length) for b in batches]
    rows, length = max(set(shapes), key=shapes.count)
    batch = next(b for b in batches if (b.rows, b.length) == (rows, length))
    array = np.zeros((rows, length), np.int32)
    for row, index in enumerate(batch.indices):
        array[row, : len(tokens[index])] = tokens[index]
    # The same batch in ids below SMALL_VOCAB (padding and EOS where they were).
    small_array = np.where(array > decoding.EOS_ID, array % (SMALL_VOCAB - 2) + 2, array)
    config, params = generator.config, generator.params
    model = families.build(config)
    encode = jax.jit(lambda p, t: model.apply({"params": p}, t, method=model.encode))
    program = decoding.compiled_greedy_search(config, max_length)
    small_config = config.replace(vocab_size=SMALL_VOCAB)
    small_params = jax.tree_util.tree_map(lambda x: x, params)  # a new tree, arrays shared
    small_params["token_embedder"] = {
        "embedding": params["token_embedder"]["embedding"][:SMALL_VOCAB]
    }
    small_params["decoder"] = dict(params["decoder"])
    kernel = params["decoder"]["logits_dense"]["kernel"]
    small_params["decoder"]["logits_dense"] = {"kernel": kernel[:, :SMALL_VOCAB]}
    small_program = decoding.compiled_greedy_search(small_config, max_length)
    timings = {
        "ours_encoder": lambda: encode(params, array).block_until_ready(),
        "ours_whole": lambda: program(params, array, screen=generator.screen).block_until_ready(),
        "ours_small_vocab": lambda: small_program(small_params, small_array).block_until_ready(),
    }
    hidden = jax.random.normal(jax.random.PRNGKey(0), (rows, config.emb_dim), jnp.float32)

    @jax.jit
    def projections(h, w):
        def body(_, h):
            best = jnp.argmax(layers.dot(h, w, config.dtype), axis=-1)
            return h + best[:, None].astype(jnp.float32) * 0.0

        return jax.lax.fori_loop(0, max_length, body, h)

    timings["xla_projection"] = lambda: projections(hidden, kernel).block_until_ready()
    if generator.screen is not None:

        @functools.partial(jax.jit, compiler_options=decoding.CPU_COMPILER_OPTIONS)
        def screened(h, w, screen):
            def body(_, h):
                best = decoding.screened_argmax(h, w, screen)
                return h + best[:, None].astype(jnp.float32) * 0.0

            return jax.lax.fori_loop(0, max_length, body, h)

        timings["screened_projection"] = lambda: screened(
            hidden, kernel, generator.screen
        ).block_until_ready()
    weight = hf_model.lm_head.weight.detach()
    torch_hidden = torch.from_numpy(np.array(hidden))

    def torch_projections():
        with torch.inference_mode():
            for _ in range(max_length):
                torch.nn.functional.linear(torch_hidden, weight).argmax(-1)

    timings["torch_projection"] = torch_projections
    ids = torch.from_numpy(array.astype(np.int64))
    hf_encoder = hf_model.get_encoder()

    def hf_encode():
        with torch.inference_mode():
            hf_encoder(input_ids=ids, attention_mask=(ids != 0).long())

    hf = HFGenerator(hf_model, max_length)
    small_head = torch.nn.Linear(config.emb_dim, SMALL_VOCAB, bias=False)
    small_head.weight = torch.nn.Parameter(weight[:SMALL_VOCAB].clone())
    inputs = [array[r][array[r] > 0] for r in range(rows)]
    small_inputs = [small_array[r][small_array[r] > 0] for r in range(rows)]

    def hf_small_vocab():
        head = hf_model.lm_head
        hf_model.lm_head = small_head
        try:
            hf.generate(small_inputs)
        finally:
            hf_model.lm_head = head

    timings["hf_encoder"] = hf_encode
    timings["hf_whole"] = lambda: hf.generate(inputs)
    timings["hf_small_vocab"] = hf_small_vocab
    for fn in timings.values():  # compiled and warm
        fn()
    # Best of 3, the timings taking turns (a change of the machine's load hits them all).
    names = list(timings)
    seconds = dict.fromkeys(names, float("inf"))
    for k in range(3):
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            timings[name]()
            seconds[name] = min(seconds[name], time.perf_counter() - start)
    ms = {name: s / max_length * 1e3 for name, s in seconds.items()}  # per step
    out = {"shape": [rows, length], "seconds": {n: round(s, 3) for n, s in seconds.items()}}
    for engine in ("ours", "hf"):
        steps = ms[f"{engine}_whole"] - ms[f"{engine}_encoder"]
        rest = ms[f"{engine}_small_vocab"] - ms[f"{engine}_encoder"]
        out[f"{engine}_ms_per_step"] = {
            "all": round(steps, 2),
            "projection": round(steps - rest, 2),
            "rest": round(rest, 2),
            "encoder_share_of_batch": round(
                seconds[f"{engine}_encoder"] / seconds[f"{engine}_whole"], 3
            ),
        }
    projections_read = [("xla", kernel.nbytes), ("torch", weight.numel() * 4)]
    if generator.screen is not None:
        projections_read.append(("screened", generator.screen.kernel.nbytes))
    for name, nbytes in projections_read:
        step_s = seconds[f"{name}_projection"] / max_length
        out[f"{name}_projection_alone"] = {
            "ms_per_step": round(step_s * 1e3, 2),
            "weight_gb_per_s": round(nbytes / step_s / 1e9, 1),
        }
    return out


def prepared(args: argparse.Namespace, prefix: str):
    """The benchmark's model and inputs, as both generation benchmarks use them: the HF
    model (`model_without_eos`), the folder it is saved in (a new one under `prefix`), the
    drawn input tokens, and ours' batches as `generate_ids` plans them (indices into the
    tokens)."""
    hf_model = model_without_eos(args.seed)
    directory = tempfile.mkdtemp(prefix=prefix)
    hf_model.save_pretrained(directory)
    tokens = draw_inputs(
        args.num_examples,
        args.max_length,
        hf_model.config.vocab_size,
        args.seed,
        args.median_length,
        min_length=args.min_length,
    )
    buckets = batching.bucket_lengths(args.input_length, generation.GENERATION_LADDER)
    lengths = [len(t) for t in tokens]
    batches = batching.plan_batches(lengths, buckets, args.batch_size * args.input_length)
    return hf_model, directory, tokens, batches


def main() -> None:
    args = parse_args()
    import torch
    import transformers

    load_before = os.getloadavg()
    hf_model, directory, tokens, batches = prepared(args, "bench_generate_")
    lengths = [len(t) for t in tokens]
    print(
        f"{len(tokens)} inputs, {sum(lengths)} tokens (median {int(np.median(lengths))}, "
        f"{min(lengths)}..{max(lengths)}), {args.max_output_length} tokens out each; "
        f"torch threads {torch.get_num_threads()}, jax devices {jax.devices()}",
        flush=True,
    )
    ours = generation.Generator(
        directory,
        vocab="demo",  # random weights: no vocabulary of theirs; generate_ids needs none
        input_length=args.input_length,
        max_output_length=args.max_output_length,
        batch_size=args.batch_size,
        dtype="float32",
    )
    ceiling_before = matmul_ceiling()

    clock = CompileClock()
    clock.counting = True
    start = time.perf_counter()
    ours.generate_ids(tokens)
    first_run_s = time.perf_counter() - start
    clock.counting = False
    print(f"ours: first run {first_run_s:.1f}s, compiling {clock.seconds:.1f}s", flush=True)

    # Each system generates one batch of ours' plan a call: ours plans it as the same shape.
    systems = {"ours": ours.generate_ids}
    if not args.skip_hf:
        systems["hf"] = HFGenerator(hf_model, args.max_output_length).generate
    ct2_dir = os.path.join(directory, "ct2_model")
    ct2_types = [t for t in args.ct2.split(",") if t]
    if ct2_types:
        import ctranslate2

        vocabulary = convert_to_ct2(hf_model, ct2_dir)
        print(f"ctranslate2 {ctranslate2.__version__}: {', '.join(ct2_types)}", flush=True)
        for compute_type in ct2_types:
            peer = CT2Generator(ct2_dir, vocabulary, compute_type, args.max_output_length)
            systems[f"ct2_{compute_type}"] = peer.generate

    names = list(systems)
    seconds = dict.fromkeys(names, 0.0)
    outputs: dict[str, list] = {name: [None] * len(tokens) for name in names}
    timed = [batch for _ in range(max(1, args.rounds)) for batch in batches]
    for k, batch in enumerate(timed):
        batch_tokens = [tokens[i] for i in batch.indices]
        for name in names[k % len(names) :] + names[: k % len(names)]:
            start = time.perf_counter()
            rows = systems[name](batch_tokens)
            seconds[name] += time.perf_counter() - start
            for i, row in zip(batch.indices, rows, strict=True):
                outputs[name][i] = row
        print(
            f"batch {k + 1}/{len(timed)} ({batch.rows} x {batch.length}): "
            + ", ".join(f"{n} {seconds[n]:.1f}s" for n in names),
            flush=True,
        )
    rounds = max(1, args.rounds)
    seconds = {name: s / rounds for name, s in seconds.items()}
    generated = {name: sum(len(row) for row in outputs[name]) for name in names}
    counts = {name: sorted({len(row) for row in outputs[name]}) for name in names}
    expected = len(tokens) * args.max_output_length
    rates = {name: generated[name] / seconds[name] for name in names}
    ours_s = seconds["ours"]
    results = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "cpu": cpu_model(),
        "load_average_before": [round(x, 2) for x in load_before],
        "versions": {
            "jax": jax.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "examples": len(tokens),
        "input_tokens": sum(lengths),
        "max_output_length": args.max_output_length,
        "batch_size": args.batch_size,
        "rows_per_batch": sorted({b.rows for b in batches}),
        "shapes": sorted({(b.rows, b.length) for b in batches}),
        "batches": len(batches),
        "rounds": rounds,
        "tokens_per_row": counts,
        "all_rows_full_length": all(generated[n] == expected for n in names),
        "seconds": {n: round(s, 2) for n, s in seconds.items()},
        "tokens_per_s": {n: round(r, 1) for n, r in rates.items()},
        "ours_first_run_seconds": round(first_run_s, 2),
        "ours_first_run_tokens_per_s": round(expected / first_run_s, 1),
        "ours_compile_seconds": round(clock.seconds, 2),
        "ours_vs": {n: round(seconds[n] / ours_s, 2) for n in names if n != "ours"},
        "ours_first_run_vs": {n: round(seconds[n] / first_run_s, 2) for n in names if n != "ours"},
    }
    if "hf" in outputs:
        results["agreement_with_hf"] = {
            n: agreement(outputs[n], outputs["hf"]) for n in names if n != "hf"
        }
    if "ct2_float32" in outputs:
        results["ours_agreement_with_ct2_float32"] = agreement(
            outputs["ours"], outputs["ct2_float32"]
        )
    if args.profile:
        results["profile"] = profile(ours, hf_model, tokens, batches, args.max_output_length)
    ceiling_after = matmul_ceiling()
    results["matmul_ceiling_gflops_before_after"] = [
        round(ceiling_before / 1e9, 1),
        round(ceiling_after / 1e9, 1),
    ]
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    shutil.rmtree(directory, ignore_errors=True)
    report_results(results, args.json)


if __name__ == "__main__":
    main()
