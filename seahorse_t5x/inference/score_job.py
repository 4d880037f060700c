"""The chunk loop of `score_file`: rows read a chunk at a time, scored, and appended to the
partial output, flushed and synced to disk after each chunk."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.inference import input_rows, resume
from seahorse_t5x.inference import questions as questions_lib
from seahorse_t5x.inference import settings as settings_lib


@dataclasses.dataclass
class Job:
    """One `score_file` run: its paths, settings and output options, and the scorer it has
    loaded (kept while the next column uses the same checkpoint)."""

    input_path: pathlib.Path
    output: pathlib.Path
    settings: settings_lib.ScoringSettings
    metric: str | None = None
    benchmark: str = constants.SEAHORSE_BENCHMARK
    resume: bool = False
    overwrite: bool = False
    skip_bad_rows: bool = False
    chunk_size: int = 4096
    progress: bool = True
    on_chunk: Callable[[int], None] | None = None
    # Printed on stderr once the first model is loaded (what `dtype auto` chose).
    announce: str | None = None
    _scorer: Any = None
    _loaded: str | None = None

    def check(self) -> None:
        """The mistakes found before anything is read.

        Raises:
          UserError: naming the setting.
        """
        fileio.check_input_file(self.input_path)
        if (
            isinstance(self.chunk_size, bool)
            or not isinstance(self.chunk_size, int)
            or (self.chunk_size < 1)
        ):
            raise errors.UserError(f"chunk_size must be at least 1, got {self.chunk_size!r}")
        if self.metric is not None and not self.metric.strip():
            raise errors.UserError("metric must name the metric, e.g. seahorse_large")

    def record(self, column: questions_lib.Column, in_column: bool = False) -> resume.RunRecord:
        """The run record of `column` (its checkpoint resolved to a local folder)."""
        return resume.RunRecord.of(
            self.input_path,
            column.checkpoint,
            self.settings,
            prompt=column.prompt,
            chunk_size=self.chunk_size,
            skip_bad_rows=self.skip_bad_rows,
            column=column.question if in_column else None,
        )

    def scorer(self, checkpoint: str):
        """The scorer of `checkpoint`: the one loaded last when it is the same, else a new
        one (the previous model freed first: one model in memory at a time)."""
        if self._loaded != checkpoint:
            self.release_scorer()
            from seahorse_t5x.inference import loading

            self._scorer = loading.load_scorer(checkpoint, self.settings)
            self._loaded = checkpoint
            if self.announce:
                print(self.announce, file=sys.stderr)
                self.announce = None
        return self._scorer

    def release_scorer(self) -> None:
        """Frees the loaded model."""
        import gc

        self._scorer, self._loaded = None, None
        gc.collect()


@dataclasses.dataclass
class Counts:
    """What one column's loop did: rows scored, rows cut or windowed, seconds."""

    rows: int = 0
    truncated_articles: int = 0
    truncated_summaries: int = 0
    windowed: int = 0
    seconds: float = 0.0


def output_line(
    row: dict[str, Any] | None,
    number: int,
    problem: str | None,
    score: Any,
    windows: Any = None,
    slim: bool = False,
) -> str:
    """One output line: the input row with `score` (and `windows`), a bad row with a null
    score and its `error`, or (`slim`, a column file) the score alone."""
    if slim:
        value = None if problem is not None else float(score)
        return (
            json.dumps({"score": value if value is None or math.isfinite(value) else None}) + "\n"
        )
    if problem is None:
        value = float(score)
        written = {**row, "score": value if math.isfinite(value) else None}
        if windows is not None:
            written["windows"] = int(windows)
    else:
        written = {**(row or {"line": number}), "score": None, "error": problem}
    return json.dumps(written, ensure_ascii=False) + "\n"


def progress_bar(total: int, initial: int, enabled: bool, label: str = ""):
    """A tqdm bar on stderr counting input rows (`enabled` False: a silent one)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="ex",
        file=sys.stderr,
        dynamic_ncols=True,
        desc=f"scoring {label}".strip(),
        disable=not enabled,
    )


def _score_chunk(scorer, settings, good, prompt, bar, counts) -> tuple[Any, Any, Any]:
    """(scores, window counts or None, the encoded inputs) of a chunk's good rows."""
    articles = [r["article"] for r in good]
    summaries = [r["summary"] for r in good]
    if settings.windowed:
        scores, encoded = scorer.score_windows(
            articles, summaries, prompt, settings.window_overlap, settings.window_aggregate
        )
        counts.windowed += int((encoded.windows > 1).sum())
        bar.update(len(good))
        return scores, encoded.windows, encoded
    encoded = scorer.encode(articles, summaries, prompt)
    scores = scorer.score_tokens(encoded.tokens, progress=bar.update)
    counts.truncated_articles += int((encoded.article_tokens_dropped > 0).sum())
    return scores, None, encoded


def score_rows(
    job: Job,
    output: pathlib.Path,
    record: resume.RunRecord,
    total: int,
    done: int,
    writer: bool,
    column: questions_lib.Column,
    slim: bool = False,
) -> Counts:
    """Scores the rows after the first `done` with `column`'s checkpoint, appending them to
    `OUTPUT.partial` chunk by chunk (`slim`: the score alone, for a question column).

    Raises:
      UserError: the partial output cannot be written.
    """
    partial = resume.partial_path(output)
    started = time.perf_counter()
    scorer = job.scorer(column.checkpoint)
    if writer:
        questions_lib.warn_on_question_mismatch(
            scorer.meta, column.checkpoint, names_question=column.prompt is not None
        )
        resume.write_record(output, record)
    counts = Counts()
    label = f"q{column.question}" if slim else ""
    bar = progress_bar(total, done, writer and job.progress, label)
    written = done
    try:
        with open(partial, "a", encoding="utf-8") as out:
            for chunk in input_rows.chunks(job.input_path, done, job.chunk_size):
                good = [row for _, row, problem in chunk if problem is None]
                scores, windows, encoded = _score_chunk(
                    scorer, job.settings, good, column.prompt, bar, counts
                )
                scores = iter(scores)
                windows = None if windows is None else iter(windows)
                lines = [
                    output_line(
                        row,
                        number,
                        problem,
                        next(scores) if problem is None else None,
                        next(windows) if problem is None and windows is not None else None,
                        slim,
                    )
                    for number, row, problem in chunk
                ]
                bar.update(len(chunk) - len(good))
                if writer:
                    out.write("".join(lines))
                    out.flush()
                    os.fsync(out.fileno())
                counts.truncated_summaries += int(encoded.summary_truncated.sum())
                counts.rows += len(good)
                written += len(chunk)
                if job.on_chunk is not None:
                    job.on_chunk(written)
    except OSError as e:
        raise errors.UserError(f"cannot write {partial}: {e.strerror or e}") from None
    finally:
        bar.close()
    counts.seconds = time.perf_counter() - started
    return counts
