"""Where training and validation numbers go: TensorBoard event files, a JSON Lines log
and a one-line progress report.

The writers follow `clu.metric_writers`' `write_scalars(step, scalars)` interface without
depending on clu: clu's TensorBoard writer imports the `tensorboard` package (for its
hparams plugin), which nothing else here needs. The event files are written with
TensorFlow's own summary op, so TensorBoard reads them and `tensorboard` need not be
installed where training runs.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TextIO


class JsonlWriter:
    """Appends `{"step": N, "split": ..., name: value, ...}` lines to a file."""

    def __init__(self, path: str | pathlib.Path, split: str) -> None:
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.split = split

    def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
        row = {"step": int(step), "split": self.split, "time": round(time.time(), 3)}
        for name, value in scalars.items():
            value = float(value)
            row[name] = value if math.isfinite(value) else str(value)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class EventFileWriter:
    """TensorBoard scalars in `logdir` (one event file per writer)."""

    def __init__(self, logdir: str | pathlib.Path) -> None:
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        self._tf = tf
        self._writer = tf.summary.create_file_writer(str(logdir))
        self._metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
        )

    def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
        tf = self._tf
        with self._writer.as_default():
            for name, value in scalars.items():
                tf.summary.write(
                    name,
                    tf.constant(float(value), tf.float32),
                    step=int(step),
                    metadata=self._metadata,
                )

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class MultiWriter:
    """Sends every call to each of `writers`."""

    def __init__(self, writers: Sequence) -> None:
        self.writers = list(writers)

    def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
        for writer in self.writers:
            writer.write_scalars(step, scalars)

    def flush(self) -> None:
        for writer in self.writers:
            writer.flush()

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


def create_writer(model_dir: str | pathlib.Path, split: str) -> MultiWriter:
    """Event files under `MODEL_DIR/<split>/` and lines in `MODEL_DIR/log.jsonl`."""
    model_dir = pathlib.Path(model_dir)
    return MultiWriter(
        [EventFileWriter(model_dir / split), JsonlWriter(model_dir / "log.jsonl", split)]
    )


class ProgressLine:
    """Prints `step  loss  steps/s  tokens/s  real-token share` every few steps."""

    def __init__(self, total_steps: int, stream: TextIO | None = None) -> None:
        self.total_steps = total_steps
        self.stream = stream or sys.stdout
        self._last_time = time.perf_counter()
        self._last_step: int | None = None
        self._tokens = 0

    def start(self, step: int) -> None:
        self._last_time = time.perf_counter()
        self._last_step = step
        self._tokens = 0

    def add_tokens(self, count: int) -> None:
        self._tokens += count

    def report(self, step: int, loss: float, real_share: float) -> dict[str, float]:
        """Prints the line and returns the rates since the previous report."""
        now = time.perf_counter()
        elapsed = max(now - self._last_time, 1e-9)
        steps = step - (self._last_step if self._last_step is not None else step)
        rates = {"steps_per_sec": steps / elapsed, "tokens_per_sec": self._tokens / elapsed}
        width = len(str(self.total_steps))
        print(
            f"step {step:>{width}}/{self.total_steps}  loss {loss:.4f}  "
            f"{rates['steps_per_sec']:.2f} steps/s  {rates['tokens_per_sec']:,.0f} tokens/s  "
            f"real tokens {100 * real_share:.1f}%",
            file=self.stream,
            flush=True,
        )
        self.start(step)
        return rates
