"""The resume protocol of `score_file`: the partial output, the record of its run, and the
point a resumed run continues from.

While a run is under way its rows go to `OUTPUT.partial`, whole chunks at a time, and its
settings to `OUTPUT.partial.run.json` (a `RunRecord`). A resumed run must have the same
record; it keeps the whole chunks already written and cuts the rest.

A finished output keeps the records of the run that wrote it in `OUTPUT.run.json` (its
fingerprint: the input's path, size and SHA-256, the checkpoint and every setting). A
resumed run declares an existing output complete only when that fingerprint is its own;
an output of another input or other settings, or one without a fingerprint, is refused
(`check_finished`), and `overwrite` scores it afresh.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import errors, fileio
from seahorse_t5x.inference import settings as settings_lib

PARTIAL_SUFFIX = ".partial"
# Beside the partial output: the settings of the run, so a resumed run continues only the same.
RUN_SUFFIX = ".partial.run.json"
# Beside the finished output: the fingerprint of the run that wrote it.
FINISHED_SUFFIX = ".run.json"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What decides the output's rows: a resumed run must have the same.

    The JSON keys are the ones runs have always written (`max_input_length` is the input
    length, `question` the question the inputs name), so partial outputs of earlier runs
    still resume; `column` is there only for a question's column file.
    """

    input: str
    input_bytes: int
    input_sha256: str
    checkpoint: str
    checkpoint_step: str
    vocab: str | None
    question: int | None
    max_input_length: int | None
    batch_size: int
    dtype: str
    param_dtype: str
    truncation: str
    long_inputs: str
    window_overlap: int
    window_aggregate: str
    chunk_size: int
    packing: bool
    label_words: str | None
    skip_bad_rows: bool
    column: int | None = None

    @classmethod
    def of(
        cls,
        input_path: pathlib.Path,
        checkpoint: str | pathlib.Path,
        settings: settings_lib.ScoringSettings,
        *,
        prompt: int | None,
        chunk_size: int,
        skip_bad_rows: bool,
        column: int | None = None,
    ) -> RunRecord:
        """The record of a run over `input_path` with `checkpoint` (the local folder it
        resolved to: a Hub model's snapshot folder names its commit) and `settings` (their
        `dtype` already chosen for the platform)."""
        from seahorse_t5x.model import checkpoints  # (reads files only; no device is touched)

        # A MODEL_DIR stands for its best (else latest) step: a resumed run must use the same.
        try:
            _, checkpoint_dir = checkpoints.detect_format(checkpoint)
        except errors.UserError:  # reported, after the output path is checked, by the loader
            checkpoint_dir = checkpoint
        vocab = settings.vocab
        if vocab is not None and not isinstance(vocab, str | pathlib.Path):
            vocab = getattr(vocab, "sentencepiece_model_file", None)
        return cls(
            input=str(input_path.resolve()),
            input_bytes=input_path.stat().st_size,
            input_sha256=fileio.file_sha256(input_path),
            checkpoint=str(pathlib.Path(checkpoint).resolve()),
            checkpoint_step=str(pathlib.Path(checkpoint_dir).resolve()),
            vocab=None if vocab is None else str(vocab),
            question=prompt,
            max_input_length=settings.input_length,
            batch_size=settings.batch_size,
            dtype=settings.dtype,
            param_dtype=settings.param_dtype,
            truncation=settings.truncation,
            long_inputs=settings.long_inputs,
            window_overlap=settings.window_overlap,
            window_aggregate=settings.window_aggregate,
            chunk_size=chunk_size,
            packing=settings.packing,
            label_words=settings_lib.label_words_text(settings.label_words),
            skip_bad_rows=skip_bad_rows,
            column=column,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as its file holds it (no `column` key for a run's one output)."""
        record = dataclasses.asdict(self)
        if record["column"] is None:
            del record["column"]
        return record

    def changed(self, saved: dict[str, Any]) -> list[str]:
        """The keys on which a saved record differs from this one, sorted."""
        own = self.to_json()
        saved = comparable(saved)
        return sorted(k for k in own if saved.get(k) != own[k])


def comparable(saved: Any) -> Any:
    """A saved record with its answer words spelt as `RunRecord` spells them
    (`settings.label_words_text`): a record that kept `"Yes, No"` matches a run given
    `Yes,No` or `Yes, No`."""
    if isinstance(saved, dict) and isinstance(saved.get("label_words"), str):
        return {**saved, "label_words": settings_lib.label_words_text(saved["label_words"])}
    return saved


def partial_path(output: pathlib.Path) -> pathlib.Path:
    """`OUTPUT.partial`: the rows written so far."""
    return output.with_name(output.name + PARTIAL_SUFFIX)


def run_path(output: pathlib.Path) -> pathlib.Path:
    """`OUTPUT.partial.run.json`: the record of the run writing `OUTPUT.partial`."""
    return output.with_name(output.name + RUN_SUFFIX)


def finished_path(output: pathlib.Path) -> pathlib.Path:
    """`OUTPUT.run.json`: the fingerprint of the run that wrote the finished `OUTPUT`."""
    return output.with_name(output.name + FINISHED_SUFFIX)


def fingerprint(
    records: Sequence[RunRecord], metric: str | None = None, benchmark: str | None = None
) -> dict[str, Any]:
    """What decides a finished output's bytes: the record of each column scored into it and,
    for score-file rows, the metric and benchmark they carry."""
    found: dict[str, Any] = {"columns": [record.to_json() for record in records]}
    if metric is not None:
        found.update(metric=metric, benchmark=benchmark)
    return found


def write_fingerprint(output: pathlib.Path, found: dict[str, Any]) -> None:
    """Records `found` beside the finished `output` (written atomically)."""
    fileio.atomic_write_text(finished_path(output), json.dumps(found, indent=2) + "\n")


def check_finished(output: pathlib.Path, found: dict[str, Any]) -> None:
    """Refuses to take the finished `output` as this run's unless its fingerprint is `found`.

    Raises:
      UserError: in one line, when `output` was written from another input, with other
        settings, or carries no fingerprint (`overwrite` scores it afresh).
    """
    record_file = finished_path(output)
    afresh = "pass `overwrite` to score it afresh, or name another `output`"
    try:
        saved = json.loads(record_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise errors.UserError(
            f"`output` {output} exists without a readable record of the run that wrote it "
            f"({record_file}), so it cannot be taken as this run's; {afresh}"
        ) from None
    saved_columns = saved.get("columns") if isinstance(saved, dict) else None
    if not isinstance(saved_columns, list) or not all(isinstance(c, dict) for c in saved_columns):
        saved_columns = []
    else:
        saved = {**saved, "columns": [comparable(c) for c in saved_columns]}
        saved_columns = saved["columns"]
    if saved == found:
        return
    own_columns = found["columns"]
    own = own_columns[0]
    contents = {(c.get("input_bytes"), c.get("input_sha256")) for c in saved_columns}
    if contents != {(own["input_bytes"], own["input_sha256"])}:
        other = saved_columns[0].get("input") if saved_columns else None
        what = (
            "another version of its input"
            if other == own["input"]
            else f"another input ({other or 'unknown'})"
        )
        raise errors.UserError(
            f"`output` {output} was written from {what}, not {own['input']}; {afresh}"
        )
    old = saved_columns[0] if saved_columns else {}
    changed = [
        _was(key, old)
        for key in own
        if key not in ("question", "column") and own.get(key) != old.get(key)
    ]
    changed += [
        f"{key} was {saved.get(key) or 'not given'}"
        for key in ("metric", "benchmark")
        if saved.get(key) != found.get(key) and (key == "metric" or "metric" in saved)
    ]
    asked = [column.get("column", column.get("question")) for column in saved_columns]
    if asked != [column.get("column", column.get("question")) for column in own_columns]:
        changed.append(f"questions were {','.join(str(q) for q in asked) or 'unknown'}")
    raise errors.UserError(
        f"`output` {output} was written from this input with other settings "
        f"({', '.join(changed) or 'unknown'}); {afresh}"
    )


def write_record(output: pathlib.Path, record: RunRecord) -> None:
    """Writes the run's record beside its partial output."""
    run_path(output).write_text(json.dumps(record.to_json(), indent=2) + "\n")


def check_output_names(
    output: pathlib.Path, input_path: pathlib.Path, resume: bool, overwrite: bool
) -> None:
    """The output-path mistakes found without writing anything (so before a download).

    Raises:
      UserError: naming the path and what is wrong with it.
    """
    if output.resolve() == input_path.resolve():
        raise errors.UserError("`output` must differ from `input`")
    fileio.check_output_path(output, "file", "`output`")
    partial = partial_path(output)
    if output.exists() and not overwrite and not resume:
        raise errors.UserError(f"`output` {output} exists; pass `overwrite` to replace it")
    if partial.exists() and not resume:
        raise errors.UserError(
            f"an interrupted run left {partial}: pass `resume` to continue it, or delete it"
        )


def check_output(
    output: pathlib.Path, input_path: pathlib.Path, resume: bool, overwrite: bool
) -> None:
    """Catches output-path mistakes before any scoring; creates the (empty) partial output.

    Raises:
      UserError: naming the path and what is wrong with it.
    """
    check_output_names(output, input_path, resume, overwrite)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(partial_path(output), "ab"):
            pass
    except OSError as e:
        raise errors.UserError(
            f"`output` {output}: cannot write there ({e.strerror or e})"
        ) from None


def _read_record(output: pathlib.Path) -> dict[str, Any]:
    run_file = run_path(output)
    try:
        return comparable(json.loads(run_file.read_text(encoding="utf-8")))
    except (OSError, ValueError) as e:
        raise errors.UserError(
            f"cannot read {run_file}: {e}; delete it and {partial_path(output)}"
        ) from None


def resume_point(output: pathlib.Path, record: RunRecord | dict[str, Any]) -> int:
    """Rows of whole chunks already in the partial output; the partial file is cut to them.

    Raises:
      UserError: when the partial output came from a run with other settings.
    """
    own = record if isinstance(record, dict) else record.to_json()
    partial = partial_path(output)
    if not run_path(output).exists():
        if partial.stat().st_size:
            raise errors.UserError(
                f"{partial} has no record of its run ({run_path(output)}); delete it to start "
                "afresh"
            )
        return 0
    saved = _read_record(output)
    changed = sorted(k for k in own if saved.get(k) != own[k])
    if changed:
        raise errors.UserError(
            f"{partial} was written with other settings ({', '.join(_was(k, saved) for k in changed)}); "
            "rerun with the same ones, or delete it to start afresh"
        )
    chunk = own["chunk_size"]
    complete = keep_bytes = kept_rows = 0
    with open(partial, "rb") as f:
        offset = 0
        for line in f:
            if not line.endswith(b"\n"):
                break
            offset += len(line)
            complete += 1
            if complete % chunk == 0:
                kept_rows, keep_bytes = complete, offset
    with open(partial, "r+b") as f:
        f.truncate(keep_bytes)
    return kept_rows


def resume_point_on_every_host(output: pathlib.Path, record: RunRecord, writer: bool) -> int:
    """`resume_point` as process 0 (the writer) finds it, told to every process."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    done = resume_point(output, record) if writer else 0
    if jax.process_count() > 1:
        done = int(multihost_utils.broadcast_one_to_all(np.int64(done)))
    return done


def check_complete_column(column: pathlib.Path, record: RunRecord) -> None:
    """Refuses a finished column file of a run with other settings.

    Raises:
      UserError: naming the settings that differ.
    """
    try:
        saved = json.loads(run_path(column).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = {}
    changed = record.changed(saved)
    if changed:
        raise errors.UserError(
            f"{column} was written with other settings ({', '.join(changed) or 'unknown'}); "
            "rerun with the same ones, or delete it to score that question afresh"
        )


def _was(key: str, saved: dict[str, Any]) -> str:
    """`key`, with the saved run's value where it is short enough to read (`batch_size was 8`)."""
    value = saved.get(key)
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 16):
        return f"{key} was {value}"
    return key
