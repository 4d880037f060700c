"""Peak memory of `seahorse-t5x score` on many short rows: bounded by the chunk, not the input.
Fills PERFORMANCE.md's "Memory of `score` on many short rows" table.

Writes a tiny random mT5 (the demo vocabulary's size) in HF format and inputs of N short
(article, summary) rows, then runs the `score` command in a fresh process for each
(rows, chunk size) asked for and reports its peak resident memory (the process's
`ru_maxrss`) and time. If memory is bounded by the chunk, the peak is the same for 100K and
1M rows and grows with the chunk size instead.

    python scripts/bench_score_memory.py --rows 100000 1000000 --chunk_sizes 4096 65536
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile

from bench_common import load_average, machine, report_results  # scripts/ on sys.path

_WORDS = (
    "the council approved a new budget after long debate rain flooded streets in the old "
    "town team won regional cup scientists found frog species near river forest prices rose"
).split()

# Runs one command and prints its peak RSS (KiB on Linux) and wall time as JSON.
_MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.run(sys.argv[1:]).returncode
print(json.dumps({"rc": code, "seconds": time.perf_counter() - started,
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def write_rows(path: pathlib.Path, count: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            article = " ".join(rng.choices(_WORDS, k=rng.randint(8, 30)))
            summary = " ".join(rng.choices(_WORDS, k=rng.randint(3, 8)))
            f.write(json.dumps({"id": i, "article": article, "summary": summary}) + "\n")


def write_model(directory: pathlib.Path) -> None:
    import jax

    from seahorse_t5x.model import configs, hf_checkpoints, mt5

    config = configs.get_config("tiny", dropout_rate=0.0)
    params = jax.device_get(mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0))))
    hf_checkpoints.save_hf(directory, config, params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--chunk_sizes", type=int, nargs="+", default=[4096])
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        write_model(tmp / "model")
        for rows in args.rows:
            pairs = tmp / f"pairs_{rows}.jsonl"
            write_rows(pairs, rows)
            for chunk in args.chunk_sizes:
                output = tmp / f"out_{rows}_{chunk}.jsonl"
                command = [sys.executable, "-m", "seahorse_t5x.cli", "score", "--checkpoint"]
                command += [str(tmp / "model"), "--vocab", "demo", "--input", str(pairs)]
                command += ["--output", str(output), "--input_length", "64"]
                command += ["--batch_size", str(args.batch_size), "--chunk_size", str(chunk)]
                command += ["--compilation_cache", str(tmp / "cache")]
                load = load_average()
                done = subprocess.run(
                    [sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True
                )
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                with open(output, "rb") as f:
                    written = sum(1 for _ in f)
                result = {
                    "rows": rows,
                    "input_mib": round(pairs.stat().st_size / 2**20, 1),
                    "chunk_size": chunk,
                    "peak_rss_mib": round(measured["max_rss_kib"] / 1024, 1),
                    "seconds": round(measured["seconds"], 1),
                    "rows_written": written,
                    "load_average": load,
                    "rc": measured["rc"],
                }
                print(json.dumps(result), flush=True)
                results.append(result)
                output.unlink()
    report_results({"machine": machine(), "runs": results}, args.json)


if __name__ == "__main__":
    main()
