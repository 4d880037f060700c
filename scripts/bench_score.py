"""Scoring throughput: this project's inference engine against HF transformers PyTorch and
CTranslate2, on a CPU or a GPU. Fills PERFORMANCE.md's tables "Scoring on a GPU against HF
transformers, and cuDNN's fused attention", "bfloat16 on a CPU with AMX, and the folded
cross-attention", "float32 against the machine's limit" and "One CPU device per core and
compiling ahead", and the `score` line of "Blockwise attention at long buckets".

Both score the same random-weight mT5-small-shaped model (built once in HF format and
converted) on the same token inputs, with lengths drawn log-normal like news articles
(clipped to [--min_length, --input_length]). HF is run as users run it: fp32, batches in
file order padded to their longest input, `model(input_ids, attention_mask,
decoder_input_ids=[[0]])`, softmax over the two label logits. Ours is
`seahorse_t5x.inference.engine.Engine`, the path `score`, `evaluate` and validation use. To
share whatever load the machine has fairly, every scorer alternates chunk by chunk.

CTranslate2 (the `bench` extra; `--ct2` lists its compute types, e.g. `float32,int8`) scores
the same model converted by its transformers converter, run as its documentation advises
for throughput: length-sorted batches (`max_batch_size`, `--ct2_batch_size`: 1 on a CPU by
default, where one input per call pads nothing and ran 1.7-2.2x faster than 8 on a 2-core
Xeon; a list such as `1,8` times each), one decoding step, `return_logits_vocab`. Its converter reads the model with `tie_word_embeddings=false`, as
the released mT5 checkpoints' config says (transformers 5 ties mT5 without rescaling; the
converter would otherwise scale the logits by d_model**-0.5). Every scorer's max |P(yes)
difference| from HF is reported beside its time. `--dtype float32,bfloat16` times the engine
in each dtype side by side (bfloat16: bfloat16 products accumulated in float32), and
`--attention blockwise,full` with and without blockwise attention at long buckets
(the engine's `blockwise_attention_from=None`; the default `auto` is the engine's: blockwise on a
CPU, full on a GPU), and
`--cpu_devices core,1` on a CPU mesh of one device per core (single-threaded programs, what
`score` runs: `partitioning.one_cpu_device_per_core`) and on one device whose products use
every core.

Ours is timed three ways: a first run (every shape traced and compiled, into an empty
persistent cache), a run from that cache (JAX's in-memory caches cleared, as a new process
finds them), and in steady state (alternating with HF, chunk by chunk). Speed-ups over HF
are reported for each.

Also measured: a JAX matmul ceiling (best of several 2048^3 products in the first
`--dtype`, float32 accumulation; on a GPU a bfloat16 8192^3 product) and the encoder's
achieved FLOP/s on this engine's padded batches (encoder alone, timed separately;
`scripts/bench_encoder.py` times it shape by shape), and every scorer's whole time as an
encoder rate on the real tokens alone (`real_token_fraction_of_ceiling`: what each reaches
of the machine's limit, padding and all other work counted as loss).

    python scripts/bench_score.py --num_examples 300 --json bench_score.json
    python scripts/bench_score.py --num_examples 64 --chunks 2 --ct2 float32,int8 \
        --dtype float32,bfloat16
    python scripts/bench_score.py --num_examples 64 --chunks 1 --rounds 2 --ct2 float32,int8 \
        --batch_size 1 --hf_batch_size 1 --dtype bfloat16,float32 --hf_bfloat16  # AMX CPUs
    python scripts/bench_score.py --num_examples 64 --ct2 float32,int8 --attention blockwise,full

`--device gpu` runs every scorer on the GPU (JAX and PyTorch both see it; the run stops
with one line where either does not): HF in bfloat16 (its `wo` kept float32, as
`from_pretrained(dtype=torch.bfloat16)` keeps mT5's) with `attn_implementation="sdpa"`
(`eager` where this transformers refuses it; the one that ran is recorded, with its P(yes)
beside eager's on a few inputs), batches of `--hf_batch_size` padded to their longest
input in length-sorted order, `torch.cuda.synchronize()` around every timed call;
CTranslate2 on `cuda` (`--ct2 bfloat16,int8_bfloat16`; a compute type that does not run
is recorded with its error); ours as `--dtype` says (`--dtype bfloat16` there), its
`--fused_attention` (`auto`: cuDNN's flash attention in bfloat16) and `--param_dtype`.
The encoder's TFLOP/s are reported as a fraction of `--peak_tflops` (989: dense bfloat16
of an H100 or H200 SXM), with the peak device memory JAX's allocator saw
(`peak_bytes_in_use`) and PyTorch's. `--num_layers`/`--num_decoder_layers` cut the depth
(XXL widths with a few layers fit a short run); scripts/gpu_bench.sh runs the set.

    python scripts/bench_score.py --device gpu --dtype bfloat16 --fused_attention auto,off \
        --ct2 bfloat16,int8_bfloat16 --hf_batch_size 32 --batch_size 16 --json gpu_small.json
    python scripts/bench_score.py --device gpu --size xxl --num_layers 2 --num_decoder_layers 2 \
        --dtype bfloat16 --param_dtype int8 --input_length 1024 --json gpu_xxl.json
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from bench_common import (  # scripts/ is on sys.path when run
    cpu_model,
    device_description,
    device_memory_bytes,
    draw_inputs,
    encoder_flops,
    load_average,
    matmul_ceiling,
    report_results,
)

from seahorse_t5x.cli import flags
from seahorse_t5x.inference import batching, executables, loading, placement, quantize
from seahorse_t5x.inference import engine as engine_lib
from seahorse_t5x.model import attention, configs, hf_checkpoints, mt5, partitioning

YES_ID, NO_ID = 333, 334  # any two ids: weights are random
DEVICES = ("cpu", "gpu")
# Dense bfloat16 TFLOP/s of an H100 or H200 SXM (NVIDIA's data sheets, without sparsity).
H100_BF16_TFLOPS = 989.0
# `--fused_attention` kinds and the Engine setting of each.
FUSED = {"auto": attention.AUTO, "on": True, "off": False}
# `--attention` kinds and the Engine setting of each.
ATTENTION_KINDS = {
    "auto": attention.AUTO,
    "blockwise": attention.BLOCKWISE_FROM_LENGTH,
    "full": None,
}
# Inputs scored by HF with SDPA and with eager attention, to compare the two.
HF_ATTENTION_CHECK = 8


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument(
        "--device",
        default="cpu",
        choices=DEVICES,
        help="where every scorer runs; gpu: HF and ours on the GPU (see the module docstring)",
    )
    parser.add_argument("--num_layers", type=int, default=None, help="encoder depth")
    parser.add_argument("--num_decoder_layers", type=int, default=None, help="decoder depth")
    parser.add_argument(
        "--model_config",
        metavar="CHECKPOINT",
        help="time the shape of this checkpoint of the project (a run folder or step: the "
        "model config it recorded) instead of --size; weights are random either way",
    )
    parser.add_argument("--num_examples", type=int, default=300)
    # `--input_length`, as in `seahorse-t5x score`; the older spelling still works, with a note.
    parser.add_argument("--input_length", dest="max_input_length", type=int, default=2048)
    flags.add_alias(parser, "--max_input_length", "--input_length")
    parser.add_argument("--min_length", type=int, default=100)
    parser.add_argument("--median_length", type=float, default=450.0)
    parser.add_argument("--sigma", type=float, default=0.8, help="log-normal sigma")
    parser.add_argument(
        "--batch_size",
        type=int,
        default=1,
        help="ours: rows at max length (tokens per batch = this x max length)",
    )
    parser.add_argument(
        "--ladder",
        default=batching.DEFAULT_LADDER,
        choices=batching.LADDERS,
        help="bucket lengths (engine ladder)",
    )
    parser.add_argument(
        "--packing", action="store_true", help="ours: pack inputs into full rows instead"
    )
    parser.add_argument("--hf_batch_size", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=3, help="alternation chunks")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="times every scorer scores every chunk, the order rotating each time; seconds "
        "are per round (--chunks 1 --rounds 2: each scorer plans and sorts the whole input, "
        "as `score` does, twice)",
    )
    parser.add_argument("--skip_hf", action="store_true")
    parser.add_argument(
        "--hf_bfloat16",
        action="store_true",
        help="on a CPU, also time HF with its weights and products in bfloat16 (`hf_bfloat16`: "
        "PyTorch's oneDNN runs them on AMX where the CPU has it)",
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        help="ours: comma-separated compute dtypes timed side by side (the first is the one "
        "timed on a first run and from the cache)",
    )
    parser.add_argument(
        "--attention",
        default="auto",
        help="ours: comma-separated attention kinds timed side by side: auto (the engine's "
        f"default: blockwise from {attention.BLOCKWISE_FROM_LENGTH} tokens on a CPU, never on "
        "a GPU), blockwise (from that length on any device) and full (every length as short "
        "ones); the first is the one timed on a first run and from the cache",
    )
    parser.add_argument(
        "--cpu_devices",
        default="core",
        help="ours on a CPU: comma-separated meshes timed side by side: core (one device per "
        "core, each program single-threaded: the default of score) and 1 (one device, "
        "products over every core); the first is the one timed on a first run",
    )
    parser.add_argument(
        "--fused_attention",
        default="auto",
        help="ours: comma-separated fused-attention settings timed side by side: auto (the "
        "engine's: on GPUs in bfloat16), on, off; the first is the one timed on a first run",
    )
    parser.add_argument(
        "--param_dtype",
        default="float32",
        choices=placement.PARAM_DTYPES,
        help="ours: the dtype weights are kept in on the device (int8: int8 projections)",
    )
    parser.add_argument(
        "--peak_tflops",
        type=float,
        default=H100_BF16_TFLOPS,
        help="with --device gpu: the device's peak TFLOP/s the encoder's rate is a fraction of",
    )
    parser.add_argument(
        "--ct2",
        default="",
        help="CTranslate2 compute types to time beside HF, e.g. float32,int8 (default: none)",
    )
    parser.add_argument(
        "--ct2_batch_size",
        default=None,
        help="CTranslate2's max_batch_size, comma-separated to time several side by side "
        "(each scorer then named ct2_TYPE_bN; default: 1 on a CPU, where one input per call "
        "has no padding and ran fastest, 32 on a GPU)",
    )
    parser.add_argument(
        "--encoder_batches",
        type=int,
        default=6,
        help="batches (evenly spread over the plan) timed for the encoder's FLOP/s; 0: skip",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")
    return parser.parse_args()


class HFScorer:
    """HF transformers' P(yes): batches of `batch_size` padded to their longest input, in
    file order, or with `length_sorted` longest first (the fair setup on a GPU)."""

    def __init__(self, model, batch_size: int, device: str = "cpu", length_sorted: bool = False):
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self.length_sorted = length_sorted

    def score(self, tokens: list[np.ndarray]) -> tuple[np.ndarray, int]:
        import torch

        order = list(range(len(tokens)))
        if self.length_sorted:
            order.sort(key=lambda i: -len(tokens[i]))
        scores, padded = np.zeros(len(tokens)), 0
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                width = max(len(tokens[i]) for i in chunk)
                batch = np.zeros((len(chunk), width), np.int64)
                for row, index in enumerate(chunk):
                    batch[row, : len(tokens[index])] = tokens[index]
                padded += batch.size
                input_ids = torch.from_numpy(batch).to(self.device)
                start_ids = torch.zeros((len(chunk), 1), dtype=torch.long, device=self.device)
                logits = self.model(
                    input_ids=input_ids,
                    attention_mask=(input_ids != 0).long(),
                    decoder_input_ids=start_ids,
                ).logits[:, 0, [YES_ID, NO_ID]]
                scores[chunk] = torch.softmax(logits.double(), dim=-1)[:, 0].cpu().numpy()
        return scores, padded

    def score_p_yes(self, tokens: list[np.ndarray]) -> np.ndarray:
        return self.score(tokens)[0]


class _IdVocabulary:
    """The tokenizer interface CTranslate2's T5 converter reads: token `t<id>` for each id
    (random weights have no vocabulary; inputs are given to CTranslate2 as these tokens)."""

    pad_token, eos_token, unk_token = "<pad>", "</s>", "<unk>"

    def __init__(self, size: int) -> None:
        self.tokens = [self.pad_token, self.eos_token, self.unk_token]
        self.tokens += [f"t{i}" for i in range(3, size)]

    def get_vocab(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.tokens)}

    def convert_ids_to_tokens(self, token_id: int) -> str:
        return self.tokens[token_id]


def convert_to_ct2(hf_model, directory: str) -> _IdVocabulary:
    """Writes `hf_model` as a CTranslate2 model (float32 weights) into `directory`."""
    import ctranslate2

    vocabulary = _IdVocabulary(hf_model.config.vocab_size)
    hf_model.config.save_pretrained(directory)

    class Converter(ctranslate2.converters.TransformersConverter):
        def load_model(self, model_class, model_name_or_path, **kwargs):
            return hf_model

        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return vocabulary

    tied = hf_model.config.tie_word_embeddings
    hf_model.config.tie_word_embeddings = False  # as mT5's own config.json says
    try:
        Converter(directory).convert(os.path.join(directory, "ct2"), force=True)
    finally:
        hf_model.config.tie_word_embeddings = tied
    return vocabulary


class CT2Scorer:
    def __init__(
        self,
        directory: str,
        vocabulary: _IdVocabulary,
        compute_type: str,
        batch: int,
        device: str = "cpu",
    ):
        import ctranslate2

        threads = {"intra_threads": os.cpu_count() or 1} if device == "cpu" else {}
        self.translator = ctranslate2.Translator(
            os.path.join(directory, "ct2"), device=device, compute_type=compute_type, **threads
        )
        self.vocabulary = vocabulary
        self.batch = batch

    def score(self, tokens: list[np.ndarray]) -> np.ndarray:
        names = self.vocabulary.tokens
        source = [[names[i] for i in ids] for ids in tokens]
        results = self.translator.translate_batch(
            source,
            max_batch_size=self.batch,
            batch_type="examples",
            beam_size=1,
            max_decoding_length=1,
            max_input_length=0,  # its default cuts inputs at 1024 tokens
            return_logits_vocab=True,
        )
        logits = np.array(
            [np.asarray(r.logits[0][0])[[YES_ID, NO_ID]] for r in results], np.float64
        )
        return 1.0 / (1.0 + np.exp(logits[:, 1] - logits[:, 0]))


def bench_config(
    size: str,
    checkpoint: str | None = None,
    num_layers: int | None = None,
    num_decoder_layers: int | None = None,
) -> configs.MT5Config:
    """The model shape timed: a named size, or the config a checkpoint of this project
    recorded (`--model_config`), without dropout; `num_layers` and `num_decoder_layers`
    replace its depths (`bench_bf16.py --num_layers`: an XXL width in a short run)."""
    depths = {}
    if num_layers:
        depths["num_encoder_layers"] = num_layers
    if num_decoder_layers:
        depths["num_decoder_layers"] = num_decoder_layers
    if not checkpoint:
        return configs.get_config(size, dropout_rate=0.0, **depths)
    from seahorse_t5x.model import checkpoints

    recorded = checkpoints.load_meta(checkpoint).get("model_config")
    if not recorded:
        raise SystemExit(f"--model_config: {checkpoint} records no model config")
    return configs.MT5Config(**{**recorded, "dropout_rate": 0.0, **depths})


def require_gpu() -> str:
    """Raises SystemExit with one line unless JAX and PyTorch both see a CUDA GPU; returns
    what they see."""
    # PyTorch shares the GPU: JAX takes memory as it needs it, not 75% of it up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    platforms = sorted({d.platform for d in jax.devices()})
    if "gpu" not in platforms:
        raise SystemExit(
            f"bench_score.py --device gpu: JAX sees no GPU (its devices: {', '.join(platforms)}; "
            "pip install 'jax[cuda13]', or run with --device cpu)"
        )
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(
            f"bench_score.py --device gpu: PyTorch {torch.__version__} sees no CUDA GPU "
            "(a CUDA build of torch is needed, or run with --device cpu)"
        )
    return device_description()


def hf_on_gpu(model, device: str = "cuda") -> tuple:
    """`model` moved to `device` in bfloat16, with SDPA attention where this transformers takes
    it for mT5 (else eager) and its `_keep_in_fp32_modules` (mT5: `wo`) in float32, as
    `from_pretrained(dtype=torch.bfloat16)` loads it. Returns (model, the attention it
    runs, why SDPA was refused or None)."""
    import torch

    error = None
    try:
        model.set_attn_implementation("sdpa")
    except (AttributeError, ValueError, ImportError, NotImplementedError) as e:
        error = f"{type(e).__name__}: {e}"
    model = model.eval().to(device=device, dtype=torch.bfloat16)
    kept = set(getattr(model, "_keep_in_fp32_modules", None) or ())
    for name, module in model.named_modules():
        if name.rpartition(".")[2] in kept:
            module.float()
    return model, model.config._attn_implementation, error


def hf_sdpa_against_eager(
    model, tokens: list[np.ndarray], batch_size: int, device: str = "cuda"
) -> float | None:
    """Max |P(yes) difference| of HF's SDPA attention from its eager one on `tokens` (None
    where the model does not run SDPA or cannot switch): a transformers whose SDPA left out
    T5's position bias would show here."""
    switch = getattr(model, "set_attn_implementation", None)
    if switch is None or model.config._attn_implementation != "sdpa":
        return None
    scorer = HFScorer(model, batch_size, device, length_sorted=True)
    sdpa, _ = scorer.score(tokens)
    switch("eager")
    try:
        eager, _ = scorer.score(tokens)
    finally:
        switch("sdpa")
    return float(np.max(np.abs(sdpa - eager)))


def engine_variants(args: argparse.Namespace) -> dict[str, tuple[str, str, str, str]]:
    """Each engine timed, by name: (dtype, attention kind, fused-attention setting, CPU
    devices). A name is its dtype, then its attention, fused setting and devices where
    several are compared."""
    kinds = ATTENTION_KINDS
    attentions = args.attention.split(",")
    if not set(attentions) <= set(kinds):
        raise SystemExit(f"--attention takes {', '.join(kinds)}, got {args.attention}")
    fused = args.fused_attention.split(",")
    if not set(fused) <= set(FUSED):
        raise SystemExit(f"--fused_attention takes {', '.join(FUSED)}, got {args.fused_attention}")
    meshes = args.cpu_devices.split(",")
    if not set(meshes) <= set(CPU_DEVICES):
        raise SystemExit(f"--cpu_devices takes {', '.join(CPU_DEVICES)}, got {args.cpu_devices}")
    variants = {}
    for d in args.dtype.split(","):
        for a in attentions:
            for f in fused:
                for m in meshes:
                    name = d + (f"_{a}" if len(attentions) > 1 else "")
                    name += f"_fused_{f}" if len(fused) > 1 else ""
                    name += CPU_DEVICES[m] if len(meshes) > 1 else ""
                    variants[name] = (d, a, f, m)
    return variants


# `--cpu_devices`: every device (one per core on a CPU), or the first device alone.
CPU_DEVICES = {"core": "_per_core", "1": "_one_device"}  # and each one's name suffix


def mesh_of(kind: str):
    """The engine's mesh for a `--cpu_devices` value (None: every device, as `score`)."""
    if kind == "core":
        return None
    return partitioning.create_mesh(partitioning.MeshConfig(), jax.devices()[:1])


def ct2_batch_sizes(value: str | None, gpu: bool) -> list[int]:
    """`--ct2_batch_size` as a list (its default by device)."""
    try:
        sizes = [int(b) for b in (value or ("32" if gpu else "1")).split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise SystemExit(f"--ct2_batch_size takes positive integers, got {value!r}")
    return sizes


def ct2_scorers(
    hf_model, directory: str, types: list[str], batches: list[int], gpu: bool
) -> tuple[dict, dict]:
    """CTranslate2 scorers by compute type (`TYPE_bN` for each of several batch sizes), and
    on a GPU the error of each type (or of the import) that does not run there: the run
    goes on without it."""
    if not types:
        return {}, {}
    if not gpu:
        import ctranslate2

        vocabulary = convert_to_ct2(hf_model, directory)
        print(f"ctranslate2 {ctranslate2.__version__}: {', '.join(types)}", flush=True)
        return {
            t + (f"_b{b}" if len(batches) > 1 else ""): CT2Scorer(directory, vocabulary, t, b)
            for t in types
            for b in batches
        }, {}
    try:
        import ctranslate2

        vocabulary = convert_to_ct2(hf_model, directory)
    except Exception as e:  # noqa: BLE001 (absent or unconvertible: recorded, not fatal)
        return {}, dict.fromkeys(types, f"{type(e).__name__}: {e}")
    scorers, errors = {}, {}
    for t in types:
        try:
            scorer = CT2Scorer(directory, vocabulary, t, batches[0], device="cuda")
            scorer.score([np.asarray([5, 6, 1], np.int32)])  # runs here, or says why not
            scorers[t] = scorer
        except Exception as e:  # noqa: BLE001
            errors[t] = f"{type(e).__name__}: {e}"
    print(f"ctranslate2 {ctranslate2.__version__} on cuda: {list(scorers)}; {errors}", flush=True)
    return scorers, errors


def encoder_rate(args, engine, params, tokens, plans, gpu: bool) -> dict:
    """The encoder's seconds and FLOP/s on `--encoder_batches` batches of the plan (the
    engine's dtype, attention and weights; best of 3 passes on a GPU)."""
    model = mt5.MT5(
        engine.config,
        scan_layers=True,  # the stacked layout `params` has
        head_major_attention=True,
        blockwise_attention_from=engine.blockwise_attention_from,
        fused_attention=engine.fused_attention,
    )

    def encode(p, t):
        with quantize.dequantizing():  # int8 weights (else a no-op)
            return model.apply({"params": p}, t, method=mt5.MT5.encode)

    encode_jit = jax.jit(encode)
    plan = [b for chunk_plan in plans for b in chunk_plan]
    picks = np.unique(np.linspace(0, len(plan) - 1, args.encoder_batches).astype(int))
    timed = [plan[i] for i in picks]
    # Batches split over the engine's mesh, compiled with its options (as it runs them).
    options = engine._programs().options((params,)) or None
    sharding = engine._batch_sharding
    encoders = {
        shape: encode_jit.lower(
            params, jax.ShapeDtypeStruct(shape, jnp.int32, sharding=sharding)
        ).compile(options)
        for shape in {(b.rows, b.length) for b in timed}
    }
    arrays = []
    for batch in timed:
        array = np.zeros((batch.rows, batch.length), np.int32)
        for row, index in enumerate(batch.indices):
            array[row, : len(tokens[index])] = tokens[index]
        arrays.append(engine._device_batch(array))
    flops = sum(encoder_flops(engine.config, b.rows, b.length) for b in timed)
    # On a GPU the batches are queued and waited on once, 5 times over (milliseconds each).
    queued = 5 if gpu else 1
    seconds = float("inf")
    for _ in range(3 if gpu else 1):
        start = time.perf_counter()
        for _ in range(queued):
            for array in arrays:
                out = encoders[array.shape](params, array)
                if not gpu:
                    out.block_until_ready()
        out.block_until_ready()
        seconds = min(seconds, (time.perf_counter() - start) / queued)
    return {"seconds": seconds, "flops": flops, "batches": len(timed)}


def real_token_rates(config, tokens, seconds: dict[str, float], ceiling: float) -> dict:
    """Each scorer's encoder FLOP/s counted on the real tokens alone (each input at its own
    length, no padding: what a scorer that padded nothing would have to compute), and that
    rate's share of the matmul ceiling: how close each comes to the machine's limit."""
    flops = sum(encoder_flops(config, 1, len(t)) for t in tokens)
    rates = {name: flops / s for name, s in seconds.items()}
    return {
        "real_token_encoder_flops": flops,
        "real_token_gflops_per_s": {n: round(r / 1e9, 1) for n, r in rates.items()},
        "real_token_fraction_of_ceiling": {n: round(r / ceiling, 3) for n, r in rates.items()},
    }


def gpu_results(args, config, hf_attention, hf_attention_error, hf_check, ct2_errors) -> dict:
    """What a `--device gpu` run adds to the results."""
    import torch
    import transformers

    out = {
        "device": device_description(),
        "torch_device": torch.cuda.get_device_name(0),
        "versions": {
            "jax": jax.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "encoder_layers": config.num_encoder_layers,
        "decoder_layers": config.num_decoder_layers,
        "width": {"emb_dim": config.emb_dim, "heads": config.num_heads, "mlp": config.mlp_dim},
        "ours_param_dtype": args.param_dtype,
        "ours_param_bytes": placement.bytes_per_device(config, {}, args.param_dtype),
        "ours_peak_gpu_bytes": device_memory_bytes(),
        "hf_peak_gpu_bytes": int(torch.cuda.max_memory_allocated()),
        "peak_tflops": args.peak_tflops,
    }
    if not args.skip_hf:
        out.update(
            hf_dtype="bfloat16 (wo float32)",
            hf_order="length-sorted",
            hf_batch_size=args.hf_batch_size,
            hf_attn_implementation=hf_attention,
            hf_sdpa_refused=hf_attention_error,
            hf_sdpa_vs_eager_max_abs_p_yes=hf_check,
        )
    if ct2_errors:
        out["ct2_errors"] = ct2_errors
    return out


def main() -> None:
    args = parse_args()
    partitioning.one_cpu_device_per_core()  # as `score` does, before JAX starts
    gpu = args.device == "gpu"
    if gpu:
        print(f"bench_score.py --device gpu: {require_gpu()}", flush=True)
    import torch
    import transformers

    load_before = load_average()
    config = bench_config(args.size, args.model_config, args.num_layers, args.num_decoder_layers)
    torch.manual_seed(args.seed)
    hf_config = transformers.MT5Config(**configs.to_hf_config(config))
    hf_model = transformers.MT5ForConditionalGeneration(hf_config).eval()
    params = hf_checkpoints.from_hf_state_dict(config, hf_model.state_dict(), tied_logits=True)
    tokens = draw_inputs(
        args.num_examples,
        args.max_input_length,
        config.vocab_size,
        args.seed,
        args.median_length,
        args.sigma,
        args.min_length,
    )
    real_tokens = sum(len(t) for t in tokens)
    print(
        f"{len(tokens)} examples, {real_tokens} tokens, lengths median "
        f"{int(np.median([len(t) for t in tokens]))} max {max(len(t) for t in tokens)}; "
        f"torch threads {torch.get_num_threads()}, jax devices {jax.devices()}",
        flush=True,
    )

    variants = engine_variants(args)
    kinds = ATTENTION_KINDS
    dtypes = list(variants)
    # A GPU's ceiling: a bfloat16 product (its float32 ones run at a fraction of that rate);
    # a CPU's: a product in the dtype of the engine whose encoder is timed. Measured before
    # the scorers and again after them, the better kept: a shared host's slow moment at one
    # end does not lower it.
    ceiling_dtype = jnp.dtype(jnp.bfloat16 if gpu else variants[dtypes[0]][0])
    ceiling_size = 8192 if gpu else 2048
    ceiling_before = matmul_ceiling(ceiling_size, dtype=ceiling_dtype)
    engines = {
        name: loading.build_engine(
            config.replace(dtype=dtype),
            (YES_ID, NO_ID),
            mesh_of(cpu_devices),
            args.max_input_length,
            args.batch_size,
            args.ladder,
            packing=args.packing,
            blockwise_attention_from=kinds[kind],
            fused_attention=FUSED[fused],
        )
        for name, (dtype, kind, fused, cpu_devices) in variants.items()
    }
    engine = engines[dtypes[0]]
    # The weights placed on each engine's mesh (one placement per mesh).
    placed = {}
    for other in engines.values():
        if other.mesh not in placed:
            placer = other.placer(args.param_dtype)
            placed[other.mesh] = placer.stack_layers(placer.place_tree(params))
    params = placed[engine.mesh]
    ct2_types = [t for t in args.ct2.split(",") if t]
    ct2_dir = tempfile.mkdtemp(prefix="bench_score_ct2_")
    # Converted from the float32 model on the host, before HF moves to the GPU.
    ct2_batches = ct2_batch_sizes(args.ct2_batch_size, gpu)
    ct2, ct2_errors = ct2_scorers(hf_model, ct2_dir, ct2_types, ct2_batches, gpu)
    hf_attention = hf_attention_error = hf_check = None
    if not gpu:
        hf = HFScorer(hf_model, args.hf_batch_size)
    elif not args.skip_hf:
        hf_model, hf_attention, hf_attention_error = hf_on_gpu(hf_model)
        hf = HFScorer(hf_model, args.hf_batch_size, "cuda", length_sorted=True)
        hf_check = hf_sdpa_against_eager(hf_model, tokens[:HF_ATTENTION_CHECK], args.hf_batch_size)
        print(
            f"hf on cuda: {hf_attention} attention ({hf_attention_error or 'as asked'})",
            flush=True,
        )
    chunks = np.array_split(np.arange(len(tokens)), args.chunks)
    # A scorer's time: the GPU's queued work included (PyTorch returns before it is done).
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def score_all() -> float:
        started = time.perf_counter()
        for chunk in chunks:
            engine.p_yes(params, [tokens[i] for i in chunk])
        return time.perf_counter() - started

    # A first run compiles every shape (into an empty persistent cache); a second run in a
    # new process finds them in that cache (JAX's in-memory caches cleared to stand for it).
    cache = tempfile.mkdtemp(prefix="bench_score_cache_")
    engine_lib.enable_compilation_cache(cache)
    first_run_s = score_all()
    jax.clear_caches()
    executables.clear_memory()
    cached_run_s = score_all()
    print(f"ours: first run {first_run_s:.1f}s, run from the cache {cached_run_s:.1f}s", flush=True)
    for other in engines.values():  # the other dtypes' programs, before timing them
        if other is not engine:
            for chunk in chunks:
                other.p_yes(placed[other.mesh], [tokens[i] for i in chunk])
    if args.packing:
        rows = batching.pack_rows(
            [len(t) for t in tokens], args.max_input_length, engine.max_segments
        )
        plans = [[batching.Batch(np.asarray(r), args.max_input_length, 1) for r in rows]]
    else:
        # Batches with indices into `tokens` (each chunk is planned on its own).
        plans = [
            [
                batching.Batch(chunk[b.indices], b.length, b.rows)
                for b in engine.plan([len(tokens[i]) for i in chunk])
            ]
            for chunk in chunks
        ]
    shapes = sorted({(b.rows, b.length) for plan in plans for b in plan})

    padded_ours = sum(b.rows * b.length for plan in plans for b in plan)
    # Every scorer, alternating chunk by chunk (each chunk starts one scorer further on).
    scorers = {f"ours_{d}": (lambda t, e=e: e.p_yes(placed[e.mesh], t)) for d, e in engines.items()}
    padded_hf = 0
    if not args.skip_hf:

        def hf_score(t):
            nonlocal padded_hf
            scores, padded = hf.score(t)
            padded_hf += padded
            return scores

        scorers["hf"] = hf_score
    if args.hf_bfloat16 and not gpu:
        scorers["hf_bfloat16"] = HFScorer(
            copy.deepcopy(hf_model).to(torch.bfloat16), args.hf_batch_size
        ).score_p_yes
    scorers.update({f"ct2_{t}": c.score for t, c in ct2.items()})
    seconds = dict.fromkeys(scorers, 0.0)
    scores = {name: np.zeros(len(tokens)) for name in scorers}
    names = list(scorers)
    timed = [chunk for _ in range(max(1, args.rounds)) for chunk in chunks]
    for k, chunk in enumerate(timed):
        chunk_tokens = [tokens[i] for i in chunk]
        for name in names[k % len(names) :] + names[: k % len(names)]:
            sync()
            start = time.perf_counter()
            scores[name][chunk] = scorers[name](chunk_tokens)
            sync()
            seconds[name] += time.perf_counter() - start
        print(
            f"chunk {k + 1}/{len(timed)}: " + ", ".join(f"{n} {seconds[n]:.1f}s" for n in names),
            flush=True,
        )
    seconds = {name: s / max(1, args.rounds) for name, s in seconds.items()}
    ours_s = seconds[f"ours_{dtypes[0]}"]

    results = {
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        "ours_devices": int(engine.mesh.devices.size),
        "ours_single_threaded_devices": partitioning.single_threaded_cpu_devices(engine.mesh),
        "cpu": cpu_model(),
        "load_average_before": load_before,
        "examples": len(tokens),
        "real_tokens": real_tokens,
        "ladder": args.ladder,
        "packing": args.packing,
        "chunks": len(chunks),
        "rounds": max(1, args.rounds),
        "batch_size": args.batch_size,
        "hf_batch_size": None if args.skip_hf else args.hf_batch_size,
        "ct2_batch_sizes": ct2_batches if ct2_types else None,
        "ours_dtype": dtypes[0],
        "ours_blockwise_attention_from": engine.blockwise_attention_from,
        "ours_seconds": round(ours_s, 2),
        "ours_first_run_seconds": round(first_run_s, 2),
        "ours_cached_run_seconds": round(cached_run_s, 2),
        "ours_examples_per_s": round(len(tokens) / ours_s, 3),
        "ours_examples_per_s_first_run": round(len(tokens) / first_run_s, 3),
        "ours_padding_efficiency": round(real_tokens / padded_ours, 3),
        "ours_shapes": len(shapes),
        # What a first run spends per shape beyond a run that loads every program.
        "ours_first_run_seconds_per_new_shape": round(
            (first_run_s - cached_run_s) / len(shapes), 3
        ),
        "seconds": {n: round(v, 2) for n, v in seconds.items()},
    }
    if not args.skip_hf:
        hf_s = seconds["hf"]
        results.update(
            hf_seconds=round(hf_s, 2),
            hf_examples_per_s=round(len(tokens) / hf_s, 3),
            hf_padding_efficiency=round(real_tokens * max(1, args.rounds) / padded_hf, 3),
            speedup=round(hf_s / ours_s, 2),
            speedup_first_run=round(hf_s / first_run_s, 2),
            speedup_cached_run=round(hf_s / cached_run_s, 2),
            max_abs_score_difference=float(
                np.max(np.abs(scores[f"ours_{dtypes[0]}"] - scores["hf"]))
            ),
            speedup_vs_hf={n: round(hf_s / v, 2) for n, v in seconds.items()},
            max_abs_p_yes_difference_from_hf={
                n: float(np.max(np.abs(scores[n] - scores["hf"]))) for n in names
            },
        )
    for name in names:
        if name.startswith("ct2_") or name == "hf_bfloat16":
            results[f"ours_vs_{name}"] = round(seconds[name] / ours_s, 2)
            results[f"ours_first_run_vs_{name}"] = round(seconds[name] / first_run_s, 2)
            for d in dtypes[1:]:
                results[f"ours_{d}_vs_{name}"] = round(seconds[name] / seconds[f"ours_{d}"], 2)
    for d in dtypes[1:]:
        results[f"ours_{d}_vs_ours_{dtypes[0]}"] = round(ours_s / seconds[f"ours_{d}"], 3)
        results[f"max_abs_p_yes_ours_{d}_vs_ours_{dtypes[0]}"] = float(
            np.max(np.abs(scores[f"ours_{d}"] - scores[f"ours_{dtypes[0]}"]))
        )
    shutil.rmtree(ct2_dir, ignore_errors=True)

    ceiling_after = matmul_ceiling(ceiling_size, dtype=ceiling_dtype)
    ceiling = max(ceiling_before, ceiling_after)
    results["matmul_ceiling_gflops"] = round(ceiling / 1e9, 1)
    results["matmul_ceiling_gflops_before_after"] = [
        round(ceiling_before / 1e9, 1),
        round(ceiling_after / 1e9, 1),
    ]
    results["matmul_ceiling_dtype"] = ceiling_dtype.name
    results.update(real_token_rates(config, tokens, seconds, ceiling))
    if args.encoder_batches > 0 and not args.packing:
        rate = encoder_rate(args, engine, params, tokens, plans, gpu)
        flops_per_s = rate["flops"] / rate["seconds"]
        results["encoder_seconds"] = round(rate["seconds"], 2)
        results["encoder_gflops_per_s"] = round(flops_per_s / 1e9, 1)
        results["encoder_fraction_of_ceiling"] = round(flops_per_s / ceiling, 3)
        results["encoder_batches_timed"] = rate["batches"]
        if gpu:
            results["encoder_tflops_per_s"] = round(flops_per_s / 1e12, 2)
            results["encoder_fraction_of_peak"] = round(flops_per_s / 1e12 / args.peak_tflops, 3)
    if gpu:
        results["gpu"] = gpu_results(
            args, config, hf_attention, hf_attention_error, hf_check, ct2_errors
        )
        results["ours_fused_attention"] = engine.fused_attention
    shutil.rmtree(cache, ignore_errors=True)
    results["load_average_after"] = load_average()
    report_results(results, args.json)


if __name__ == "__main__":
    main()
