#!/usr/bin/env bash
# Creates (or reuses) a Cloud TPU VM or pod slice, installs T5X and seahorse-t5x on every
# host, and runs T5X training, evaluation or score-mode inference with this project's gins.
# docs/tpu.md walks through a whole run.
set -euo pipefail

# quote_arg, quote_command
source "$(dirname "${BASH_SOURCE[0]}")/lib/shell_quote.sh"

usage() {
  cat <<'EOF'
Usage: scripts/launch_tpu.sh [--dry-run] ACTION --name NAME --zone ZONE [options]

Actions:
  create     create the TPU VM (or reuse it when one with that name exists)
  setup      install T5X and this package on every host (--worker=all)
  train      python -m t5x.train with seahorse_t5x/gin/experiments/EXPERIMENT.gin, every host
  eval       python -m t5x.eval  (seahorse_t5x/gin/runs/eval.gin) on a score task, every host
  infer      python -m t5x.infer (seahorse_t5x/gin/runs/infer_score.gin) on a score task, every host
  delete     delete the TPU VM

Common options:
  --name NAME            TPU VM name (required)
  --zone ZONE            e.g. us-central2-b (required)
  --project PROJECT      gcloud project (default: gcloud's configured project)
  --dry-run              print the commands instead of running them

create:
  --accelerator TYPE     e.g. v3-32, v4-64, v5litepod-64, v5p-128 (required)
  --version VERSION      TPU software version (default: tpu-ubuntu2204-base; v5e and v5p
                         need their own, e.g. v2-alpha-tpuv5-lite / v2-alpha-tpuv5)
  --spot                 create a Spot TPU (cheaper, can be preempted)

setup:
  --repo URL             git URL of this project (default: this checkout's origin)
  --ref REF              commit or branch to install (default: this checkout's HEAD commit)
  --t5x_ref REF          T5X commit or branch (default: main)
  --python VERSION       Python for the hosts' environment, e.g. 3.12 (default: any of
                         3.11, 3.12, 3.13, the versions this package supports; one the
                         image lacks is downloaded by uv)

train:
  --experiment NAME      experiments/NAME.gin of the installed gins, e.g. seahorse_q4_xxl (required)
  --model_dir DIR        gs:// folder for checkpoints and logs (required)
  --data_dir DIR         gs:// folder with the prepared split files (SEAHORSE experiments)
  --cache_dir DIR        read cached tasks from DIR (scripts/cache_tasks.sh's output)
  --gin BINDING          extra gin binding, e.g. --gin 'BATCH_SIZE=64' (repeatable)
  --env NAME=VALUE       environment variable for the run on every host (repeatable), e.g.
                         --env SEAHORSE_FEVER_NLI_DIR=gs://BUCKET/fever_nli

eval / infer:
  --size SIZE            small, base, large, xl or xxl (required)
  --task TASK            score task, e.g. seahorse_q4_score (required)
  --checkpoint DIR       a T5X checkpoint_N folder (required)
  --output_dir DIR       gs:// folder for the results (required)
  --data_dir DIR         prepared split files (required for SEAHORSE tasks)
  --split SPLIT          test (default) or validation
  --gin BINDING          extra gin binding (repeatable)
  --env NAME=VALUE       environment variable for the run on every host (repeatable)

Examples:
  scripts/launch_tpu.sh create --name seahorse --zone us-central2-b --accelerator v4-64
  scripts/launch_tpu.sh setup --name seahorse --zone us-central2-b
  scripts/launch_tpu.sh train --name seahorse --zone us-central2-b \
      --experiment seahorse_q4_xxl --model_dir gs://BUCKET/seahorse/q4_xxl \
      --data_dir gs://BUCKET/seahorse/prepared
EOF
}

die() {
  echo "launch_tpu.sh: error: $*" >&2
  echo "Run scripts/launch_tpu.sh --help for usage." >&2
  exit 2
}

# Prints (dry run) or runs a command; the printed form is shell-quoted, so it can be pasted.
run() {
  if [[ "${DRY_RUN}" == 1 ]]; then
    quote_command "$@"
  else
    "$@"
  fi
}

DRY_RUN=0
ACTION=""
NAME=""
ZONE=""
PROJECT=""
ACCELERATOR=""
VERSION="tpu-ubuntu2204-base"
SPOT=0
REPO=""
REF=""
T5X_REF="main"
# The Python versions setup.py's python_requires allows; uv picks one the host has or
# downloads a standalone build (tpu-ubuntu2204-base ships Python 3.10, too old for jax).
SUPPORTED_PYTHON=">=3.11,<3.14"
PYTHON_REQUEST="${SUPPORTED_PYTHON}"
EXPERIMENT=""
MODEL_DIR=""
DATA_DIR=""
CACHE_DIR=""
SIZE=""
TASK=""
CHECKPOINT=""
OUTPUT_DIR=""
SPLIT="test"
GIN_BINDINGS=()
ENV_VARS=()

need_value() {
  [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) DRY_RUN=1; shift ;;
    create | setup | train | eval | infer | delete)
      [[ -z "${ACTION}" ]] || die "give one action (got ${ACTION} and $1)"
      ACTION="$1"; shift ;;
    --name) need_value "$@"; NAME="$2"; shift 2 ;;
    --zone) need_value "$@"; ZONE="$2"; shift 2 ;;
    --project) need_value "$@"; PROJECT="$2"; shift 2 ;;
    --accelerator) need_value "$@"; ACCELERATOR="$2"; shift 2 ;;
    --version) need_value "$@"; VERSION="$2"; shift 2 ;;
    --spot) SPOT=1; shift ;;
    --repo) need_value "$@"; REPO="$2"; shift 2 ;;
    --ref) need_value "$@"; REF="$2"; shift 2 ;;
    --t5x_ref) need_value "$@"; T5X_REF="$2"; shift 2 ;;
    --python)
      need_value "$@"
      [[ "$2" =~ ^3\.(11|12|13)$ ]] || die "--python must be 3.11, 3.12 or 3.13, got: $2"
      PYTHON_REQUEST="$2"; shift 2 ;;
    --experiment) need_value "$@"; EXPERIMENT="$2"; shift 2 ;;
    --model_dir) need_value "$@"; MODEL_DIR="$2"; shift 2 ;;
    --data_dir) need_value "$@"; DATA_DIR="$2"; shift 2 ;;
    --cache_dir) need_value "$@"; CACHE_DIR="$2"; shift 2 ;;
    --size) need_value "$@"; SIZE="$2"; shift 2 ;;
    --task) need_value "$@"; TASK="$2"; shift 2 ;;
    --checkpoint) need_value "$@"; CHECKPOINT="$2"; shift 2 ;;
    --output_dir) need_value "$@"; OUTPUT_DIR="$2"; shift 2 ;;
    --split) need_value "$@"; SPLIT="$2"; shift 2 ;;
    --gin) need_value "$@"; GIN_BINDINGS+=("$2"); shift 2 ;;
    --env)
      need_value "$@"
      [[ "$2" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env needs NAME=VALUE, got: $2"
      ENV_VARS+=("$2"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

[[ -n "${ACTION}" ]] || { usage >&2; exit 2; }
[[ -n "${NAME}" ]] || die "--name is required"
[[ -n "${ZONE}" ]] || die "--zone is required"

GCLOUD_SCOPE=(--zone="${ZONE}")
if [[ -n "${PROJECT}" ]]; then
  GCLOUD_SCOPE+=(--project="${PROJECT}")
fi
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where the hosts keep the two checkouts (relative to the login user's home).
REMOTE_PROJECT="seahorse-t5x"
REMOTE_T5X="t5x"
# The hosts' virtual environment, and its interpreter, which every action runs.
REMOTE_VENV="seahorse-venv"
PY="~/${REMOTE_VENV}/bin/python"

# Runs one shell command line on every host of the slice.
on_all_hosts() {
  run gcloud compute tpus tpu-vm ssh "${NAME}" "${GCLOUD_SCOPE[@]}" --worker=all \
    --command="$1"
}

# A --gin.KEY=VALUE flag whose string value T5X parses as a gin string literal.
gin_string() {
  printf -- '--gin.%s=%q' "$1" "\"$2\""
}

extra_gin_flags() {
  local binding
  for binding in "${GIN_BINDINGS[@]+"${GIN_BINDINGS[@]}"}"; do
    printf -- ' --gin.%q' "${binding}"
  done
}

# `NAME=VALUE ` prefixes for the remote command line, each value shell-quoted.
env_prefix() {
  local assignment
  for assignment in "${ENV_VARS[@]+"${ENV_VARS[@]}"}"; do
    printf '%s=%q ' "${assignment%%=*}" "${assignment#*=}"
  done
}

require_gs() {
  [[ "$2" == gs://* ]] || die "$1 must be a gs:// path (every host reads and writes it), got: $2"
}

# The package's gins, named on the hosts by package path (seahorse_t5x/gin/...) as T5X's are.
GIN_ROOT="${REPO_ROOT}/seahorse_t5x/gin"

case "${ACTION}" in
  create)
    [[ -n "${ACCELERATOR}" ]] || die "create needs --accelerator (e.g. v4-64)"
    if [[ "${DRY_RUN}" == 0 ]] &&
      gcloud compute tpus tpu-vm describe "${NAME}" "${GCLOUD_SCOPE[@]}" >/dev/null 2>&1; then
      echo "TPU VM ${NAME} exists in ${ZONE}: reusing it"
      exit 0
    fi
    create=(gcloud compute tpus tpu-vm create "${NAME}" "${GCLOUD_SCOPE[@]}"
      --accelerator-type="${ACCELERATOR}" --version="${VERSION}")
    if [[ "${SPOT}" == 1 ]]; then
      create+=(--spot)
    fi
    run "${create[@]}"
    ;;

  setup)
    if [[ -z "${REPO}" ]]; then
      REPO="$(git -C "${REPO_ROOT}" remote get-url origin 2>/dev/null)" ||
        die "this checkout has no origin remote: pass --repo URL"
    fi
    if [[ -z "${REF}" ]]; then
      REF="$(git -C "${REPO_ROOT}" rev-parse HEAD)"
    fi
    # This package first: it pins jax, flax, optax, orbax, seqio and TensorFlow to versions
    # tested together. T5X (and the two T5X dependencies not on PyPI) then go in without
    # their dependencies, which would pull flax/optax/seqio from git HEAD; its remaining
    # dependencies are named explicitly; jax[tpu] at the pinned jax version adds libtpu.
    remote="set -euo pipefail
python3 -m pip install --user --quiet uv || python3 -m pip install --user --quiet --break-system-packages uv
~/.local/bin/uv venv --seed --allow-existing --python $(quote_arg "${PYTHON_REQUEST}") ~/${REMOTE_VENV}
${PY} -c 'import platform; print(platform.node(), \"uses Python\", platform.python_version())'
${PY} -m pip install --upgrade pip
if [ ! -d ~/${REMOTE_PROJECT} ]; then git clone $(printf %q "${REPO}") ~/${REMOTE_PROJECT}; fi
git -C ~/${REMOTE_PROJECT} fetch --all --quiet
git -C ~/${REMOTE_PROJECT} checkout --quiet $(printf %q "${REF}")
${PY} -m pip install -e ~/${REMOTE_PROJECT}
if [ ! -d ~/${REMOTE_T5X} ]; then git clone https://github.com/google-research/t5x ~/${REMOTE_T5X}; fi
git -C ~/${REMOTE_T5X} fetch --all --quiet
git -C ~/${REMOTE_T5X} checkout --quiet $(printf %q "${T5X_REF}")
${PY} -m pip install --no-deps -e ~/${REMOTE_T5X}
${PY} -m pip install --no-deps git+https://github.com/google/airio git+https://github.com/google-research/jestimator
${PY} -m pip install fiddle jaxtyping cached_property chex grain portpicker tensorboard
${PY} -m pip install \"jax[tpu]==\$(${PY} -c 'import jax; print(jax.__version__)')\"
${PY} -c 'import jax, t5x.train, seahorse_t5x.tasks; print(jax.process_index(), jax.device_count(), \"devices\")'"
    on_all_hosts "${remote}"
    ;;

  train)
    [[ -n "${EXPERIMENT}" ]] || die "train needs --experiment (e.g. seahorse_q4_xxl)"
    [[ -f "${GIN_ROOT}/experiments/${EXPERIMENT}.gin" ]] ||
      die "no experiments/${EXPERIMENT}.gin (see ls \$(seahorse-t5x gin-path)/experiments)"
    [[ -n "${MODEL_DIR}" ]] || die "train needs --model_dir gs://..."
    require_gs --model_dir "${MODEL_DIR}"
    flags="--gin_file=seahorse_t5x/gin/experiments/${EXPERIMENT}.gin"
    if [[ -n "${CACHE_DIR}" ]]; then
      flags+=" --gin_file=seahorse_t5x/gin/runs/use_cached_tasks.gin"
      flags+=" --seqio_additional_cache_dirs=$(printf %q "${CACHE_DIR}")"
    fi
    flags+=" $(gin_string MODEL_DIR "${MODEL_DIR}")"
    if [[ "${EXPERIMENT}" == seahorse_* ]]; then
      [[ -n "${DATA_DIR}" ]] || die "SEAHORSE experiments need --data_dir gs://... (prepared splits)"
      flags+=" $(gin_string SEAHORSE_DATA_DIR "${DATA_DIR}")"
    fi
    flags+="$(extra_gin_flags)"
    on_all_hosts "cd ~/${REMOTE_PROJECT} && $(env_prefix)${PY} -m t5x.train ${flags} --alsologtostderr"
    ;;

  eval | infer)
    [[ -n "${SIZE}" ]] || die "${ACTION} needs --size (small, base, large, xl, xxl)"
    [[ -f "${GIN_ROOT}/models/mt5_${SIZE}.gin" ]] || die "no models/mt5_${SIZE}.gin"
    [[ -n "${TASK}" ]] || die "${ACTION} needs --task (e.g. seahorse_q4_score)"
    [[ -n "${CHECKPOINT}" ]] || die "${ACTION} needs --checkpoint gs://.../checkpoint_N"
    [[ -n "${OUTPUT_DIR}" ]] || die "${ACTION} needs --output_dir gs://..."
    require_gs --output_dir "${OUTPUT_DIR}"
    [[ "${SPLIT}" == test || "${SPLIT}" == validation ]] || die "--split must be test or validation"
    if [[ "${ACTION}" == eval ]]; then
      module=t5x.eval run_gin=seahorse_t5x/gin/runs/eval.gin out_macro=EVAL_OUTPUT_DIR split_macro=EVAL_SPLIT
    else
      module=t5x.infer run_gin=seahorse_t5x/gin/runs/infer_score.gin out_macro=INFER_OUTPUT_DIR
      split_macro=INFER_SPLIT
    fi
    flags="--gin_file=seahorse_t5x/gin/models/mt5_${SIZE}.gin --gin_file=${run_gin}"
    flags+=" $(gin_string MIXTURE_OR_TASK_NAME "${TASK}")"
    flags+=" $(gin_string CHECKPOINT_PATH "${CHECKPOINT}")"
    flags+=" $(gin_string "${out_macro}" "${OUTPUT_DIR}")"
    flags+=" $(gin_string "${split_macro}" "${SPLIT}")"
    if [[ "${TASK}" == seahorse_* ]]; then
      [[ -n "${DATA_DIR}" ]] || die "SEAHORSE tasks need --data_dir gs://... (prepared splits)"
      flags+=" $(gin_string SEAHORSE_DATA_DIR "${DATA_DIR}")"
    else
      flags+=" --gin.SEAHORSE_DATA_DIR=None"
    fi
    flags+="$(extra_gin_flags)"
    on_all_hosts "cd ~/${REMOTE_PROJECT} && $(env_prefix)${PY} -m ${module} ${flags} --alsologtostderr"
    ;;

  delete)
    run gcloud compute tpus tpu-vm delete "${NAME}" "${GCLOUD_SCOPE[@]}" --quiet
    ;;
esac
