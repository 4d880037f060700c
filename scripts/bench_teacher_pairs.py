"""Teacher pairs on disk: the time and peak memory of joining N synthetic teacher-scored pairs
into a split file (`join_teacher_scores`), registering distillation tasks on the joined
folder and reading their first examples, and a few training steps from it.

Fills PERFORMANCE.md's table "Teacher pairs on disk". Each stage runs in its own process
under `/usr/bin/time -v` (wall time, maximum resident set size); the rows are printed as the
table's Markdown and written to OUTPUT_DIR/bench_teacher_pairs.json.

    python scripts/bench_teacher_pairs.py --pairs 100000 1000000 10000000 \
      --output_dir /tmp/teacher_bench --train_pairs 10000000

Stages, per N: `generate` (the teacher file: scored pairs as `score --questions 1,2,3,4,5,6`
writes them, ~0.75 kB a row), `join`, `register` (registration on the joined folder, and the
first 1,000 examples of `{name}_all` through SeqIO), and, for `--train_pairs`, `train`
(the runner's tiny network, 3 steps of 8 rows from the mixture).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import time

QUESTIONS = (1, 2, 3, 4, 5, 6)
WORDS = (
    "council river bridge museum team school market harbour station library festival road "
    "mayor residents weather budget election season report minister village hospital"
).split()


def generate(path: pathlib.Path, count: int, seed: int = 0) -> None:
    """`count` distinct scored pairs: an article of ~60 words, a summary of ~12, six scores."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            article = " ".join(rng.choices(WORDS, k=60)) + f" (article {i})."
            summary = " ".join(rng.choices(WORDS, k=12)) + f" ({i})."
            row = {
                "gem_id": f"synthetic-{i}",
                "article": article,
                "summary": summary,
                "language": "en",
                "system": f"s{i % 7}",
                **{f"score_q{q}": round(rng.random(), 6) for q in QUESTIONS},
            }
            out.write(json.dumps(row) + "\n")


def join(scores: pathlib.Path, output_dir: pathlib.Path) -> None:
    from seahorse_t5x.data import teacher_scores

    read = teacher_scores.join_teacher_scores(scores, QUESTIONS, output_dir, human_labels=False)
    print(read.summary()[:300])


def register(joined: pathlib.Path) -> None:
    import seqio

    from seahorse_t5x.tasks import distillation

    names = distillation.register_distillation_tasks("bench", joined, QUESTIONS)
    dataset = seqio.get_mixture_or_task(names[-1]).get_dataset(
        {"inputs": 128, "targets": 4}, split="train", shuffle=True, seed=0
    )
    taken = sum(1 for _ in dataset.take(1000).as_numpy_iterator())
    print(f"registered {len(names)} names; read {taken} examples of {names[-1]}")


def train(joined: pathlib.Path, model_dir: pathlib.Path) -> None:
    from seahorse_t5x.runner import trainer
    from seahorse_t5x.tasks import distillation

    distillation.register_distillation_tasks("bench", joined, QUESTIONS)
    result = trainer.train(
        model_dir=str(model_dir),
        mixture_or_task_name="bench_all",
        task_feature_lengths={"inputs": 128, "targets": 4},
        train_steps=3,
        batch_size=8,
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        validation_tasks=(),
        checkpoint_period=3,
        log_period=1,
    )
    print(f"trained to step {result.step}, loss {result.final_loss:.3f}")


def _measured(stage: str, *args: str) -> dict:
    """Runs one stage in a new process under /usr/bin/time -v."""
    command = ["/usr/bin/time", "-v", sys.executable, __file__, "--stage", stage, *args]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{stage} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1])
    print(f"  {stage}: {seconds:.1f} s, peak {peak_kb / 1024**2:.2f} GiB; {done.stdout.strip()}")
    return {"stage": stage, "seconds": round(seconds, 1), "peak_gib": round(peak_kb / 1024**2, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="*", default=[100_000])
    parser.add_argument(
        "--output_dir", type=pathlib.Path, default=pathlib.Path("/tmp/teacher_bench")
    )
    parser.add_argument("--train_pairs", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the files of each N")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("SEAHORSE_VOCAB", "demo")
    if args.stage:
        stage = {"generate": generate, "join": join, "register": register, "train": train}
        paths = [pathlib.Path(a) for a in args.args]
        if args.stage == "generate":
            generate(paths[0], int(args.args[1]))
        else:
            stage[args.stage](*paths)
        return
    # The shared harness (it imports JAX) only here: a stage's peak memory stays its own.
    from bench_common import load_average, machine, report_results  # scripts/ on sys.path

    rows = []
    for count in args.pairs:
        folder = args.output_dir / str(count)
        folder.mkdir(parents=True, exist_ok=True)
        scores, joined = folder / "teacher.jsonl", folder / "joined"
        print(f"{count:,} pairs")
        stages = [
            _measured("generate", str(scores), str(count)),
            _measured("join", str(scores), str(joined)),
            _measured("register", str(joined)),
        ]
        if count == args.train_pairs:
            stages.append(_measured("train", str(joined), str(folder / "student")))
        sizes = {
            "teacher_gb": round(scores.stat().st_size / 1e9, 2),
            "joined_gb": round((joined / "train.jsonl").stat().st_size / 1e9, 2),
        }
        rows.append({"pairs": count, **sizes, "stages": stages})
        if not args.keep:
            scores.unlink()
            (joined / "train.jsonl").unlink()
    report_results(
        {"machine": machine(), "load_average": load_average(), "pairs": rows},
        str(args.output_dir / "bench_teacher_pairs.json"),
    )
    print("\n| pairs | teacher file | stage | time | peak memory |\n|---:|---:|---|---:|---:|")
    for row in rows:
        for stage in row["stages"]:
            print(
                f"| {row['pairs']:,} | {row['teacher_gb']} GB | {stage['stage']} | "
                f"{stage['seconds']:.0f} s | {stage['peak_gib']:.2f} GiB |"
            )


if __name__ == "__main__":
    main()
