"""Turns T5X score-mode inference output into this project's per-example score files.

`python -m t5x.infer` with `gin/runs/infer_score.gin` writes, for a task such as
`seahorse_q4_score`, the file `INFER_OUTPUT_DIR/seahorse_q4_score-score.jsonl-00000-of-00001`:
one JSON object per example, in dataset order,

    {"inputs": {"inputs_pretokenized": "premise: ... hypothesis: ...",
                "targets_pretokenized": "1"},
     "score": -0.0123}

where `score` is the sum of the target tokens' log-probabilities: log P('1' | input) +
log P(EOS | input, '1'). With `infer.num_shards = n`, shard k holds the examples k, k + n,
k + 2n, ... (SeqIO's `Dataset.shard`), in files `...-0000k-of-0000n`.

The score task's examples are the rows of the prepared split file that carry a label for
the question (in the language, for `.xx` tasks), in file order; that is how labels and
slice fields (gem_id, language, dataset, system) are joined back, by position. The summary
at the end of each `inputs_pretokenized` is checked against the joined row, so a file from
another task, split or data folder is refused instead of silently mislabelled. Output
without `inputs_pretokenized` cannot be checked and is refused, unless the join by
position alone is asked for (`join_by_position`).

The score written is log P('1' then EOS), also kept as `log_p_yes`: higher means more
likely Yes. It is a monotone function of exp(score) = P('1') * P(EOS | '1') over the whole
vocabulary, not exactly the two-way softmax P(yes) = P('1') / (P('1') + P('0')) that
`seahorse-t5x score` computes; for a fine-tuned metric nearly all first-step mass is on
'1' and '0' and P(EOS | '1') is close to 1, so the two order examples (almost) alike.
ROC-AUC depends on that order only; Pearson rho is computed on the log-probabilities.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence

from seahorse_t5x import constants, errors, fileio, input_format, task_names
from seahorse_t5x.data import splits

_SHARD_PATTERN = re.compile(r"-(\d{5})-of-(\d{5})$")


def parse_task(task: str) -> tuple[int, str | None]:
    """`seahorse_q4_score`, `seahorse_q4_score.de`, `seahorse_all_q4_score` -> (4, None|'de').

    Raises:
      UserError: for a name that is not a SEAHORSE score task.
    """
    parsed = task_names.parse_seahorse_task(task)
    if parsed is None or not parsed.score:
        raise errors.UserError(
            f"--task {task!r} is not a SEAHORSE score task; expected seahorse_q<n>_score, "
            "seahorse_q<n>_score.<language> or seahorse_all_q<n>_score (n = 1..6)"
        )
    language = parsed.language
    if language is not None and language not in constants.LANGUAGES:
        raise errors.UserError(
            f"--task {task!r}: language {language!r} is not one of {', '.join(constants.LANGUAGES)}"
        )
    return parsed.question, language


def _open(path: str):
    if "://" in path:
        import tensorflow as tf  # only for remote (gs://) paths

        return tf.io.gfile.GFile(path, "r")
    # A byte-order mark is dropped; bytes that are not UTF-8 are reported as file:line.
    return fileio.open_text_input(path)


def _exists(path: str) -> bool:
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def _json_lines(path: str) -> Iterator[tuple[int, dict]]:
    return fileio.iter_json_objects(path, opener=_open)


def order_shards(paths: Sequence[str]) -> list[str]:
    """The infer output files in shard order, checked to be one complete set.

    A single file without a shard suffix is returned as it is.

    Raises:
      UserError: for no files, a mix of shard sets, duplicates or missing shards.
    """
    if not paths:
        raise errors.UserError("no --infer_output file given")
    for path in paths:
        if not _exists(path):
            raise errors.UserError(f"infer output not found: {path}")
    shards: dict[int, str] = {}
    totals = set()
    for path in paths:
        match = _SHARD_PATTERN.search(path)
        if match is None:
            if len(paths) > 1:
                raise errors.UserError(
                    f"{path} has no -NNNNN-of-NNNNN shard suffix; give one unsharded file, "
                    "or all shards of one inference run"
                )
            return [path]
        index, total = int(match.group(1)), int(match.group(2))
        if index in shards:
            raise errors.UserError(f"shard {index} given twice: {shards[index]} and {path}")
        shards[index] = path
        totals.add(total)
    if len(totals) != 1:
        raise errors.UserError(f"the files come from runs with different shard counts {totals}")
    total = totals.pop()
    missing = sorted(set(range(total)) - set(shards))
    if missing:
        raise errors.UserError(
            f"shards {missing} of {total} are missing; T5X writes one file per shard_id and "
            "the examples are interleaved across them, so all are needed"
        )
    return [shards[i] for i in range(total)]


def read_infer_output(paths: Sequence[str]) -> list[tuple[str, int, dict]]:
    """The score-mode records in dataset order, each as (file, line, record).

    Raises:
      UserError / DataError: for incomplete shard sets, bad JSON, or a record without a
        numeric `score` (predict-mode output, or scores with intermediates).
    """
    ordered = order_shards(paths)
    per_shard = []
    for path in ordered:
        records = []
        for number, record in _json_lines(path):
            score = record.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                hint = " (predict-mode output? run infer.py with mode='score')" * (
                    "prediction" in record
                )
                raise errors.DataError(
                    path, number, "score", f"expected a number, got {score!r}{hint}"
                )
            records.append((path, number, record))
        per_shard.append(records)
    n = len(per_shard)
    if n == 1:
        return per_shard[0]
    # Shard k holds examples k, k + n, ...: its sizes are equal or one less than shard 0's.
    sizes = [len(records) for records in per_shard]
    if any(not (sizes[0] - 1 <= size <= sizes[0]) for size in sizes) or any(
        a < b for a, b in zip(sizes, sizes[1:], strict=False)
    ):
        raise errors.UserError(
            f"shard sizes {sizes} cannot come from one dataset split round-robin into {n}"
        )
    merged = []
    for position in range(sizes[0]):
        for records in per_shard:
            if position < len(records):
                merged.append(records[position])
    return merged


def labelled_rows(data_dir: str, split: str, question: int, language: str | None) -> list[dict]:
    """Rows of `{data_dir}/{split}.jsonl` with a q{question} label, in file order: the
    examples of the score task (`data.splits.labelled_rows`, as the tasks select them).

    Raises:
      UserError: if the split file is missing; DataError for a malformed row.
    """
    if split not in constants.SPLITS:
        raise errors.UserError(f"--split must be one of {', '.join(constants.SPLITS)}")
    path = splits.split_path(data_dir, split)
    if not _exists(path):
        raise errors.UserError(
            f"split file not found: {path} (written by `seahorse-t5x prepare`; --data_dir "
            "must be the folder the infer run read)"
        )
    return list(splits.labelled_rows(path, question, language, opener=_open))


def ends_with_text(text: str, tail: str) -> bool:
    """Whether `text` ends with `tail`, whitespace runs counted as one space (how a T5X
    infer output's `inputs_pretokenized` is checked against the row it is joined to)."""
    return " ".join(text.split()).endswith(" ".join(tail.split()))


def _check_joined_text(
    path: str, number: int, inputs: dict, tail: str, row_name: str, join_by_position: bool
) -> bool:
    """Whether the record's `inputs_pretokenized` was checked to end with `tail` (False: it
    has none and `join_by_position` accepts it unchecked).

    Raises:
      DataError: the text is missing (without `join_by_position`), not text, or does not end
        with `tail`.
    """
    text = inputs.get("inputs_pretokenized")
    if text is None:
        if not join_by_position:
            raise errors.DataError(
                path,
                number,
                "inputs.inputs_pretokenized",
                "missing, so the row it is joined to cannot be checked; write the inputs "
                "with the inference output, or pass --join_by_position to join by "
                "position unchecked",
            )
        return False
    if not isinstance(text, str):
        raise errors.DataError(
            path, number, "inputs.inputs_pretokenized", f"expected text, got {text!r}"
        )
    if not ends_with_text(text, tail):
        raise errors.DataError(
            path,
            number,
            "inputs.inputs_pretokenized",
            f"does not end with the summary of {row_name}: the output and the split file are "
            "not in the same order",
        )
    return True


def join_records(
    infer_paths: Sequence[str],
    data_dir: str,
    *,
    task: str,
    split: str,
    metric: str,
    question: int,
    language: str | None,
    tail: Callable[[dict], str],
    join_by_position: bool = False,
    target: str | None = constants.TARGET_YES,
) -> tuple[list[dict], dict[str, int]]:
    """T5X score-mode records joined by position with the split-file rows the task read
    (`labelled_rows`: those labelled for `question`, in `language` if given, in file order).

    Every record is checked against its row: its `inputs_pretokenized` must end with
    `tail(row)` (whitespace runs as one space); a record without it is refused unless
    `join_by_position`, and then counted as `unchecked`. The score is T5X's log P(target),
    kept as `score` and `log_p_yes`.

    Args:
      infer_paths: the infer output file, or every shard file of one run.
      data_dir: the prepared data folder the inference read.
      task, split, metric: carried by every score row.
      question, language: the task's question and language.
      tail: the end of the task's input text for a row.
      join_by_position: accept records without `inputs_pretokenized`, unchecked.
      target: the constant target a record must carry in `targets_pretokenized` when it
        has one (None: any).

    Returns:
      (score rows in dataset order, counts `{"examples", "non_finite_scores", "unchecked"}`).

    Raises:
      UserError: the output and the split file hold different numbers of examples.
      DataError: the first record that does not match its row, with its file and line.
    """
    records = read_infer_output(infer_paths)
    rows = labelled_rows(data_dir, split, question, language)
    if len(records) != len(rows):
        where = f" in {language}" if language else ""
        raise errors.UserError(
            f"the infer output has {len(records)} examples but {data_dir}/{split}.jsonl has "
            f"{len(rows)} rows labelled for Q{question}{where}: was it inferred with "
            f"task {task}, split {split} and this data folder?"
        )
    out = []
    non_finite = unchecked = 0
    for (path, number, record), row in zip(records, rows, strict=True):
        inputs = record.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise errors.DataError(path, number, "inputs", f"expected an object, got {inputs!r}")
        given = inputs.get("targets_pretokenized")
        if target is not None and given is not None and given != target:
            raise errors.DataError(
                path,
                number,
                "inputs.targets_pretokenized",
                f"expected the constant target {target!r} of a score task, got "
                f"{given!r}: the score is then not log P(yes)",
            )
        row_name = (
            f"row {len(out) + 1} labelled for Q{question} in {split}.jsonl for {task} "
            f"(gem_id {row.get('gem_id')!r})"
        )
        unchecked += not _check_joined_text(
            path, number, inputs, tail(row), row_name, join_by_position
        )
        score = float(record["score"])
        if not math.isfinite(score):
            non_finite += 1
            score = math.nan
        result = {
            "metric": metric,
            "benchmark": constants.SEAHORSE_BENCHMARK,
            "question": question,
            "label": int(row[splits.label_field(question)]),
            "score": score,
            "log_p_yes": score,
        }
        for name in splits.SLICE_FIELDS:
            result[name] = row[name]
        result["task"] = task
        result["split"] = split
        out.append(result)
    return out, {"examples": len(out), "non_finite_scores": non_finite, "unchecked": unchecked}


def join_warnings(counts: dict[str, int]) -> list[str]:
    """What the user should know about a join's counts (`join_records`), one line each."""
    warnings = []
    if counts["unchecked"]:
        warnings.append(
            f"{counts['unchecked']} rows were joined by position without a check "
            "(--join_by_position)"
        )
    if counts["non_finite_scores"]:
        warnings.append(
            f"{counts['non_finite_scores']} scores were NaN or infinite; written as null "
            "(the report counts and drops them)"
        )
    return warnings


def convert(
    infer_paths: Sequence[str],
    task: str,
    data_dir: str,
    split: str,
    metric: str,
    join_by_position: bool = False,
) -> tuple[list[dict], dict[str, int]]:
    """Joins T5X score-mode output with the split file's labels and slice fields.

    Args:
      infer_paths: the infer output file, or every shard file of one run.
      task: the score task that was inferred, e.g. `seahorse_q4_score`.
      data_dir: the prepared data folder the inference read.
      split: the split that was inferred (infer_score.gin's INFER_SPLIT).
      metric: the name the score rows carry (`metric` field).
      join_by_position: accept records without `inputs.inputs_pretokenized` (whose rows
        cannot be checked) and join them by position alone; counted as `unchecked`.

    Returns:
      (rows, counts): score-file rows in dataset order, and counts
      `{"examples", "non_finite_scores", "unchecked"}`.

    Raises:
      UserError / DataError: when the output and the split file do not line up (count,
        target or summary text), with the file and line of the first difference.
    """
    if not metric.strip():
        raise errors.UserError("--metric must name the metric (e.g. seahorse_q4_xxl_t5x)")
    question, language = parse_task(task)
    return join_records(
        infer_paths,
        data_dir,
        task=task,
        split=split,
        metric=metric,
        question=question,
        language=language,
        tail=lambda row: input_format.hypothesis_text(row["summary"]),
        join_by_position=join_by_position,
    )
