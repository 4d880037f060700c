#!/usr/bin/env bash
# Caches this project's SeqIO tasks with SeqIO's Beam script, so T5X reads preprocessed
# examples (USE_CACHED_TASKS = True) instead of preprocessing on every host at every start.
# The cache holds everything before the tasks' CacheDatasetPlaceholder (text building and
# tokenization); truncation to TASK_FEATURE_LENGTHS still happens when T5X reads it, so one
# cache serves every input length. docs/tpu.md shows where this fits in a run.
set -euo pipefail

# quote_arg, quote_command
source "$(dirname "${BASH_SOURCE[0]}")/lib/shell_quote.sh"

usage() {
  cat <<'EOF'
Usage: scripts/cache_tasks.sh --tasks T1,T2,... --output_cache_dir DIR [options]

Runs: python -m seqio.scripts.cache_tasks_main --module_import=seahorse_t5x.tasks
        --tasks=... --output_cache_dir=... --alsologtostderr [--pipeline_options=...]

Options:
  --tasks LIST            comma-separated task names (required). Cache the training task
                          and its validation score task together, e.g.
                          seahorse_q4,seahorse_q4_score (T5X reads both from the cache)
  --output_cache_dir DIR  where the cache goes, e.g. gs://BUCKET/seahorse/cache (required);
                          give it to t5x.train as --seqio_additional_cache_dirs
  --data_dir DIR          prepared SEAHORSE split files (sets SEAHORSE_DATA_DIR; needed for
                          seahorse_* tasks)
  --vocab PATH            SentencePiece model (sets SEAHORSE_VOCAB; default mT5's gs:// path).
                          Must be the path the model gin's VOCAB_PATH uses.
  --tfds_data_dir DIR     TFDS data folder (XNLI and NLI tasks)
  --runner RUNNER         DirectRunner (default: this machine) or DataflowRunner
  --project PROJECT       Dataflow: Google Cloud project
  --region REGION         Dataflow: region, e.g. us-central1
  --temp_location DIR     Dataflow: gs:// folder for temporary files
  --overwrite             replace an existing cache of these tasks
  --dry-run               print the command instead of running it

Needs Apache Beam: python3 -m pip install -e ".[beam]" then python3 -m pip install
protobuf==7.36.2 (sentencepiece's generated code needs protobuf >= 7.36.1; Beam declares
protobuf < 7 but runs with it); for Dataflow also 'apache-beam[gcp]==2.77.0'.
Dataflow workers do not see this shell's environment, so SEAHORSE_DATA_DIR cannot reach
them: cache the SEAHORSE tasks (about 100,000 examples) with the DirectRunner, and use
Dataflow for the large TFDS-backed NLI tasks.

Examples:
  scripts/cache_tasks.sh --tasks seahorse_q4,seahorse_q4_score \
      --data_dir gs://BUCKET/seahorse/prepared --output_cache_dir gs://BUCKET/seahorse/cache
  scripts/cache_tasks.sh --tasks nli_snli,nli_mnli,nli_scitail,nli_paws --runner DataflowRunner \
      --project PROJECT --region us-central1 --temp_location gs://BUCKET/tmp \
      --tfds_data_dir gs://BUCKET/tfds --output_cache_dir gs://BUCKET/seahorse/cache
EOF
}

die() {
  echo "cache_tasks.sh: error: $*" >&2
  echo "Run scripts/cache_tasks.sh --help for usage." >&2
  exit 2
}

need_value() {
  [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"
}

TASKS=""
OUTPUT_CACHE_DIR=""
DATA_DIR=""
VOCAB=""
TFDS_DATA_DIR=""
RUNNER="DirectRunner"
PROJECT=""
REGION=""
TEMP_LOCATION=""
OVERWRITE=0
DRY_RUN=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --overwrite) OVERWRITE=1; shift ;;
    --tasks) need_value "$@"; TASKS="$2"; shift 2 ;;
    --output_cache_dir) need_value "$@"; OUTPUT_CACHE_DIR="$2"; shift 2 ;;
    --data_dir) need_value "$@"; DATA_DIR="$2"; shift 2 ;;
    --vocab) need_value "$@"; VOCAB="$2"; shift 2 ;;
    --tfds_data_dir) need_value "$@"; TFDS_DATA_DIR="$2"; shift 2 ;;
    --runner) need_value "$@"; RUNNER="$2"; shift 2 ;;
    --project) need_value "$@"; PROJECT="$2"; shift 2 ;;
    --region) need_value "$@"; REGION="$2"; shift 2 ;;
    --temp_location) need_value "$@"; TEMP_LOCATION="$2"; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

[[ -n "${TASKS}" ]] || die "--tasks is required (e.g. seahorse_q4,seahorse_q4_score)"
[[ -n "${OUTPUT_CACHE_DIR}" ]] || die "--output_cache_dir is required"
if [[ ",${TASKS}," == *",seahorse_"* && -z "${DATA_DIR}" && -z "${SEAHORSE_DATA_DIR:-}" ]]; then
  die "seahorse_* tasks need --data_dir (the prepared split files)"
fi

pipeline_options="--runner=${RUNNER}"
case "${RUNNER}" in
  DirectRunner) ;;
  DataflowRunner)
    [[ -n "${PROJECT}" && -n "${REGION}" && -n "${TEMP_LOCATION}" ]] ||
      die "DataflowRunner needs --project, --region and --temp_location"
    [[ ",${TASKS}," != *",seahorse_"* ]] ||
      die "Dataflow workers cannot see SEAHORSE_DATA_DIR: cache seahorse_* tasks with DirectRunner"
    REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    # setup_file ships this package (and its task registrations) to the workers.
    pipeline_options+=",--project=${PROJECT},--region=${REGION}"
    pipeline_options+=",--temp_location=${TEMP_LOCATION},--setup_file=${REPO_ROOT}/setup.py"
    ;;
  *) die "--runner must be DirectRunner or DataflowRunner, got ${RUNNER}" ;;
esac

env_vars=()
if [[ -n "${DATA_DIR}" ]]; then
  env_vars+=("SEAHORSE_DATA_DIR=${DATA_DIR}")
fi
if [[ -n "${VOCAB}" ]]; then
  env_vars+=("SEAHORSE_VOCAB=${VOCAB}")
fi
cmd=(python3 -m seqio.scripts.cache_tasks_main
  --module_import=seahorse_t5x.tasks
  --tasks="${TASKS}"
  --output_cache_dir="${OUTPUT_CACHE_DIR}"
  --pipeline_options="${pipeline_options}")
if [[ -n "${TFDS_DATA_DIR}" ]]; then
  cmd+=(--tfds_data_dir="${TFDS_DATA_DIR}")
fi
if [[ "${OVERWRITE}" == 1 ]]; then
  cmd+=(--overwrite)
fi
cmd+=(--alsologtostderr)

if [[ "${DRY_RUN}" == 0 ]]; then
  python3 -c 'import apache_beam' 2>/dev/null ||
    die "needs Apache Beam: python3 -m pip install -e \".[beam]\" (in this repository)"
  python3 -c 'from sentencepiece import sentencepiece_model_pb2' 2>/dev/null ||
    die "sentencepiece needs protobuf >= 7.36.1 (installing Beam downgrades it): python3 -m pip install protobuf==7.36.2"
fi

if [[ "${DRY_RUN}" == 1 ]]; then
  quote_command "${env_vars[@]+"${env_vars[@]}"}" "${cmd[@]}"
else
  env "${env_vars[@]+"${env_vars[@]}"}" "${cmd[@]}"
fi
