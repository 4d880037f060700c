#!/usr/bin/env bash
# The GPU benchmarks, in one run of about 15 minutes on one NVIDIA GPU (written for an H100
# or H200; no network needed). They fill PERFORMANCE.md's GPU tables: "Scoring on a GPU
# against HF transformers, and cuDNN's fused attention" (steps 2-3), "mT5-XXL at full depth
# on one GPU, and the next batch in flight" (4-5), "The encoder alone on a GPU" (6) and
# "Generation (greedy) on a GPU" (7). From the repository root,
#
#   scripts/gpu_bench.sh [OUT] [STEP ...]   # OUT: where the results go (default
#                                           # ./gpu_bench_out); STEPs: those of 2-7 to run
#                                           # (default: all), e.g. `dispatch xxl generate`
#
# 1. what the machine has: nvidia-smi, the devices JAX and PyTorch see, the modules the
#    benchmark imports (a missing one is named, with what installs it);
# 2. `small`: mT5-small, scripts/bench_score.py --device gpu, ours in bfloat16 with fused
#    attention (`auto`: cuDNN) and without and in float32 (the reference for P(yes)), HF
#    transformers in bfloat16 (SDPA), CTranslate2 where its wheel runs on this GPU
#    (bfloat16, int8_bfloat16);
# 3. `xxl_2_layers`: mT5-XXL widths with 2 encoder and 2 decoder layers: ours with int8
#    weights in bfloat16, fused and not, and HF: the encoder's TFLOP/s against a 989 TFLOP/s
#    peak, and the peak device memory;
# 4. `dispatch`: the next batch in flight against one batch at a time (scripts/
#    bench_dispatch.py), mT5-small, 256 inputs, bfloat16;
# 5. `xxl`: mT5-XXL at full depth (24 + 24 layers) with int8 weights made on the GPU
#    (scripts/bench_xxl.py): peak device memory and speed at batch sizes 1 to 16 of 2048
#    tokens, what `plan --scoring` computes for this GPU, and HF bfloat16 on 64 inputs;
# 6. `encoder_small`, `encoder_xxl`: the encoder alone (scripts/bench_encoder.py): mT5-small
#    at 16 x 2048 tokens and XXL widths at 8 x 2048 and 32 x 512, fused attention off and
#    on, TFLOP/s against a bfloat16 8192^3 product, and each one's distance from float32.
# 7. `generate`: greedy generation (scripts/bench_generate_gpu.py), mT5-small, 128 inputs x 128
#    tokens, ours in bfloat16 and float32 against HF `generate` in both, token agreement.
#
# The package runs from the checkout (PYTHONPATH=.), with the machine's python3 and its
# jax, flax, torch and transformers. Each step has its own time limit: one that fails or
# runs out leaves the others to run. OUT gets each step's log and JSON, and summary.txt.
set -uo pipefail

OUT="${1:-./gpu_bench_out}"
shift $(( $# > 0 ? 1 : 0 ))
STEPS=("$@")
PYTHON="${PYTHON:-python3}"
mkdir -p "${OUT}"
export PYTHONPATH=".${PYTHONPATH:+:${PYTHONPATH}}"
# PyTorch and JAX share the GPU: JAX takes memory as it needs it, not 75% of it up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
SUMMARY="${OUT}/summary.txt"
: > "${SUMMARY}"

if [[ ! -f scripts/bench_score.py || ! -d seahorse_t5x ]]; then
  echo "gpu_bench.sh: run it from the repository root (no scripts/bench_score.py here)" >&2
  exit 2
fi

# step NAME SECONDS COMMAND...: runs COMMAND under `timeout`, its output in OUT/NAME.log
# (unless STEPs were named and NAME is not one of them).
step() {
  local name="$1" limit="$2"
  shift 2
  if [[ ${#STEPS[@]} -gt 0 && " ${STEPS[*]} " != *" ${name} "* && ${name} != nvidia_smi \
        && ${name} != devices ]]; then
    return 0
  fi
  local started=${SECONDS}
  echo "== ${name} (at most ${limit}s): $*"
  timeout --kill-after=5 "${limit}" "$@" > "${OUT}/${name}.log" 2>&1
  local rc=$?
  local verdict="ok"
  if [[ ${rc} -eq 124 || ${rc} -eq 137 ]]; then
    verdict="ran out of its ${limit}s"
  elif [[ ${rc} -ne 0 ]]; then
    verdict="failed (exit ${rc})"
  fi
  echo "${name}: ${verdict}, $((SECONDS - started))s" | tee -a "${SUMMARY}"
  if [[ ${rc} -ne 0 ]]; then
    tail -n 5 "${OUT}/${name}.log" | sed 's/^/    /'
  fi
  return 0
}

step nvidia_smi 15 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv

step devices 45 "${PYTHON}" - <<'PY'
import importlib
import platform

# What the benchmark imports, and what installs each where it is missing.
NEEDED = {
    "numpy": "numpy",
    "jax": "jax[cuda13]",
    "flax": "flax",
    "optax": "optax",
    "torch": "torch (a CUDA build)",
    "transformers": "transformers",
    "safetensors": "safetensors",
    "seahorse_t5x.inference.engine": "this package's dependencies (pip install -e .)",
}
missing = []
for module, package in NEEDED.items():
    try:
        importlib.import_module(module)
    except ImportError as e:
        missing.append(f"{module} ({e}; install {package})")
try:
    import ctranslate2

    print(f"ctranslate2 {ctranslate2.__version__}, cuda devices: "
          f"{ctranslate2.get_cuda_device_count()}")
except ImportError:
    print("ctranslate2: absent (its scorers are left out; the JSON records why)")
if missing:
    raise SystemExit("missing: " + "; ".join(missing))
import jax
import torch

print(f"python {platform.python_version()}, jax {jax.__version__}: {jax.devices()}")
print(f"torch {torch.__version__}: cuda {torch.cuda.is_available()}, "
      f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}")
if jax.devices()[0].platform != "gpu" or not torch.cuda.is_available():
    raise SystemExit("JAX and PyTorch must both see the GPU")
PY
if grep -q "^devices: ok" "${SUMMARY}"; then cat "${OUT}/devices.log"; fi

step small 160 "${PYTHON}" scripts/bench_score.py --device gpu --size small \
  --dtype bfloat16,float32 --fused_attention auto,off --ct2 bfloat16,int8_bfloat16 \
  --num_examples 256 --batch_size 16 --hf_batch_size 32 --ct2_batch_size 32 \
  --ladder 2 --chunks 2 --encoder_batches 6 --json "${OUT}/small.json"

step xxl_2_layers 230 "${PYTHON}" scripts/bench_score.py --device gpu --size xxl \
  --num_layers 2 --num_decoder_layers 2 --dtype bfloat16 --param_dtype int8 \
  --fused_attention auto,off --num_examples 64 --input_length 1024 \
  --batch_size 4 --hf_batch_size 8 --ladder 2 --chunks 2 --encoder_batches 4 \
  --json "${OUT}/xxl_2_layers.json"

step dispatch 100 "${PYTHON}" scripts/bench_dispatch.py --size small --num_examples 256 \
  --rounds 4 --json "${OUT}/dispatch.json"

step xxl 300 "${PYTHON}" scripts/bench_xxl.py --param_dtype int8 --batch_sizes 1,2,4,8,16 \
  --num_examples 64 --json "${OUT}/xxl.json"

step encoder_small 90 "${PYTHON}" scripts/bench_encoder.py --size small --num_layers 8 \
  --shapes 16x2048 --json "${OUT}/encoder_small.json"

step encoder_xxl 150 "${PYTHON}" scripts/bench_encoder.py --size xxl --num_layers 2 \
  --shapes 8x2048,32x512 --json "${OUT}/encoder_xxl.json"

step generate 200 "${PYTHON}" scripts/bench_generate_gpu.py --num_examples 128 \
  --max_output_length 128 --batch_size 32 --rounds 1 --json "${OUT}/generate.json"

echo "== summary (${SECONDS}s in all; results in ${OUT}):"
cat "${SUMMARY}"
