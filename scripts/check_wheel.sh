#!/usr/bin/env bash
# The package off the checkout's path: builds the wheel, installs it alone in a fresh virtual
# environment and, from an empty folder, runs what the docs tell a new user to run:
#   - `seahorse-t5x gin-path --includes` on a T5X experiment gin (every include resolves
#     under the installed gin folder, T5X's own named as T5X's), `seahorse-t5x demo-data`;
#   - docs/distillation.md's ```bash blocks: teacher scores -> register_distillation_tasks
#     -> a student -> evaluate -> report --teacher;
#   - docs/extending.md's ```bash blocks: your own ratings -> register_rating_tasks in a
#     module -> a small `train` from local/small_from_scratch.gin -> `evaluate` -> `report`;
#   - docs/explanations.md's ```bash blocks: the demo's error analyses ->
#     register_explanation_tasks -> a few `train` steps -> `explain` -> `report`;
#   - with --demo, `seahorse-t5x demo` as well (about 7 CPU-minutes: 8 minutes on 2 quiet cores).
# A packaging mistake (a gin file or module left out of the wheel) fails here.
#
#   scripts/check_wheel.sh [--demo] [--keep DIR]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DEMO=0
WORK=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --demo) RUN_DEMO=1 ;;
    --keep) WORK="$2"; shift ;;
    *) echo "usage: scripts/check_wheel.sh [--demo] [--keep DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z "${WORK}" ]]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "${WORK}"' EXIT
fi
mkdir -p "${WORK}"

echo "== building the wheel"
python3 -m pip wheel --quiet --no-deps --wheel-dir "${WORK}/dist" "${ROOT}"
wheel=("${WORK}"/dist/seahorse_t5x-*.whl)
gins="$(python3 -m zipfile -l "${wheel[0]}" | grep -c '^seahorse_t5x/gin/.*\.gin ' || true)"
echo "${wheel[0]##*/}: ${gins} gin files"

echo "== installing it in a fresh virtual environment"
python3 -m venv "${WORK}/venv"
"${WORK}/venv/bin/pip" install --quiet "${wheel[0]}"
export PATH="${WORK}/venv/bin:${PATH}"
unset PYTHONPATH

mkdir -p "${WORK}/empty"
cd "${WORK}/empty"
echo "== from an empty folder: $(pwd)"
installed="$(python -c 'import seahorse_t5x; print(seahorse_t5x.__file__)')"
echo "seahorse_t5x from ${installed}"
[[ "${installed}" == "${WORK}/venv/"* ]] || { echo "not the installed package" >&2; exit 1; }
seahorse-t5x gin-path --includes experiments/seahorse_q4_xxl.gin
seahorse-t5x demo-data --output_dir demo_data
seahorse-t5x gin-path --includes experiments/ice_mt0_small.gin >/dev/null

echo "== docs/extending.md"
python "${ROOT}/scripts/run_doc_blocks.py" "${ROOT}/docs/extending.md" --workdir "${WORK}/empty/extending"

echo "== docs/explanations.md"
python "${ROOT}/scripts/run_doc_blocks.py" "${ROOT}/docs/explanations.md" --workdir "${WORK}/empty/explanations"

echo "== docs/distillation.md"
python "${ROOT}/scripts/run_doc_blocks.py" "${ROOT}/docs/distillation.md" --workdir "${WORK}/empty/distillation"

if [[ "${RUN_DEMO}" == 1 ]]; then
  echo "== seahorse-t5x demo"
  seahorse-t5x demo --output_dir "${WORK}/empty/demo"
fi
echo "== the installed wheel works from an empty folder"
