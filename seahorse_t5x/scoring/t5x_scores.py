"""T5X score-mode inference output -> this project's per-example score files (`t5x-scores`).

`python -m t5x.infer` with a score-mode run gin (`gin/runs/infer_score.gin`, the ICE
experiment gins) writes, for a task such as `seahorse_q4_score`, the file
`INFER_OUTPUT_DIR/seahorse_q4_score-score.jsonl-00000-of-00001`: one JSON object per
example, in dataset order,

    {"inputs": {"inputs_pretokenized": "premise: ... hypothesis: ...",
                "targets_pretokenized": "1"},
     "score": -0.0123, "aux": {"log_p_no": -4.41}}

The run gins' model is `t5x_models.LabelScoringModel`: `score` is log P(yes) and
`aux.log_p_no` log P(no) of the two-way softmax over the `1` and `0` logits at the first
decoder step (ICE: the answer words' first pieces), so exp(score) + exp(log_p_no) = 1, and
the converter writes `score` = exp(score) = P(yes), what `seahorse-t5x score` computes, with
`log_p_yes` beside it. With `infer.num_shards = n`, shard k holds the examples k, k + n,
k + 2n, ... (SeqIO's `Dataset.shard`), in files `...-0000k-of-0000n` (read back in order by
`infer_output`).

Output of T5X's own `EncoderDecoderModel` (gins before `LabelScoringModel`, or a model gin
of one's own) has no `aux.log_p_no`: its score is log P(target) over the whole vocabulary,
log P('1' | input) + log P(EOS | input, '1'). It is still read, and written as it is
(`score` = `log_p_yes` = that log-probability, `score_kind` `log_p_target`), with a warning:
a monotone function of P('1') * P(EOS | '1'), not the two-way P(yes). A file mixing the two
kinds is refused.

One converter for every score task whose examples are split-file rows in file order, told
apart by the task name (`score_task`):

  SEAHORSE score tasks   `seahorse_q4_score`, `seahorse_q4_score.de`, `seahorse_all_q4_score`:
                         the rows of `{data_dir}/{split}.jsonl` (the `prepare` output)
                         labelled for the question (in the language), input
                         `... hypothesis: {summary}`, target `1`
  ICE tasks              `ice_q4_k4_stratified`, `ice_q4_k2_uniform.de`: the same rows,
                         prompt ending `Summary: {summary} Answer:`, target the answer word
  a rating set's tasks   `tone_polite_score`, `tone_polite_score.en`, `tone_all_polite_score`
                         of a set registered in this process (`tasks.register_rating_tasks`;
                         `t5x-scores --module FILE.py` imports the module that registers
                         it): the rows of the set's `{split}.jsonl` labelled for the
                         question, read as the task reads them (a bad row is dropped and
                         counted, as the task drops it), input `... hypothesis: {summary}`,
                         target `1`

`--split` is the split the inference read, one the task has (default `test`): train,
validation or test for a SEAHORSE task; validation or test for an ICE task (its
demonstrations are drawn from train); the set's own splits for a rating task. Anything else
is refused before a file is read.

Labels and slice fields (gem_id, language, dataset, system) are joined back by position.
The summary at the end of each `inputs_pretokenized` is checked against the joined row, so
a file from another task, split or data folder is refused instead of silently mislabelled.
Output without `inputs_pretokenized` cannot be checked and is refused, unless the join by
position alone is asked for (`join_by_position`).

"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence

from seahorse_t5x import constants, errors
from seahorse_t5x.data import rating_rows, ratings, scorefiles, splits
from seahorse_t5x.formats import ice_format, input_format, task_names
from seahorse_t5x.scoring import infer_output

# `score_kind` of the rows written: P(yes) of the two-way softmax (`LabelScoringModel`
# output), or T5X's log P(target) over the whole vocabulary (its own model).
SCORE_KIND_P_YES = "p_yes"
SCORE_KIND_LOG_P_TARGET = "log_p_target"
# The aux value LabelScoringModel's records carry (t5x_models.AUX_LOG_P_NO, named here
# too so the converter does not import JAX).
AUX_LOG_P_NO = "log_p_no"
# How far exp(log P(yes)) + exp(log P(no)) may be from 1 (float32 log-softmax, printed
# to JSON as float32 values: about 1e-7 in practice).
_TWO_WAY_TOLERANCE = 1e-4


def _hypothesis_tail(row: dict) -> str:
    """The end of a SEAHORSE or rating-set task's premise/hypothesis input."""
    return input_format.hypothesis_text(row["summary"])


def _ice_tail(row: dict) -> str:
    """The end of an ICE task's prompt: the rated summary and the answer cue."""
    return ice_format.demonstration_rest(row["summary"], None)


@dataclasses.dataclass(frozen=True)
class ScoreTask:
    """What the converter knows of an inferred task (`score_task`).

    Attributes:
      name: the task name.
      benchmark: the score rows' `benchmark` (`seahorse`, or the rating set's name).
      question: the score rows' `question` (1..6, or the rating set's question).
      language: the task's language (None: all rows).
      splits: the splits the task has.
      tail: the end of the task's input text for a row.
      target: the constant target of its records (None: any, as ICE's answer word).
      rating_set: the registered rating set of a rating task.
    """

    name: str
    benchmark: str
    question: int | str
    language: str | None
    splits: tuple[str, ...]
    tail: Callable[[dict], str]
    target: str | None = constants.TARGET_YES
    rating_set: ratings.RatingSet | None = None

    @property
    def question_name(self) -> str:
        """`Q4`, or a rating question quoted (`'polite'`), as the messages name it."""
        return f"Q{self.question}" if isinstance(self.question, int) else repr(self.question)


def _unknown_task(task: str, hint: str = "") -> errors.UserError:
    return errors.UserError(
        f"--task {task!r} is not a SEAHORSE score task (seahorse_q<n>_score, "
        "seahorse_q<n>_score.<language> or seahorse_all_q<n>_score, n = 1..6), an ICE task "
        "(ice_q<n>_k<shots>_uniform or _stratified, optionally .<language>) or a registered "
        "rating set's score task (<set>_<question>_score, optionally .<language>, or "
        f"<set>_all_<question>_score; --module FILE.py imports the module that registers it){hint}"
    )


def score_task(task: str) -> ScoreTask:
    """The kind, question, language and splits of an inferred task, from its name.

    Raises:
      UserError: a name that is none of the three kinds (with the score task to use when
        the name is a training task or a mixture), or an unknown SEAHORSE language.
    """
    parsed = task_names.parse_seahorse_task(task)
    if parsed is not None:
        if not parsed.score:
            score_name = dataclasses.replace(parsed, score=True).name
            raise _unknown_task(task, f" (the score task of {task} is {score_name})")
        if parsed.language is not None and parsed.language not in constants.LANGUAGES:
            raise errors.UserError(
                f"--task {task!r}: language {parsed.language!r} is not one of "
                f"{', '.join(constants.LANGUAGES)}"
            )
        return ScoreTask(
            task,
            constants.SEAHORSE_BENCHMARK,
            parsed.question,
            parsed.language,
            constants.SPLITS,
            _hypothesis_tail,
        )
    parsed_ice = task_names.parse_ice_task(task)
    if parsed_ice is not None and parsed_ice.mode in ice_format.SAMPLING_MODES:
        # The answer word is the ICE task's own (not the score tasks' "1"): any target is taken.
        return ScoreTask(
            task,
            constants.SEAHORSE_BENCHMARK,
            parsed_ice.question,
            parsed_ice.language,
            ice_format.QUERY_SPLITS,
            _ice_tail,
            target=None,
        )
    rating = ratings.rating_task_of(task)
    if rating is None:
        raise _unknown_task(task)
    if rating.question is None:
        example = ratings.rating_task(
            rating.benchmark, "<question>", score=True, multi_question=True
        )
        raise _unknown_task(
            task,
            f" ({task} is a mixture: t5x.infer writes one file per task; convert each, e.g. "
            f"{example})",
        )
    if not rating.score:
        score_name = dataclasses.replace(rating, score=True).name
        raise _unknown_task(task, f" (the score task of {task} is {score_name})")
    rating_set = ratings.get_rating_set(rating.benchmark)
    return ScoreTask(
        task,
        rating.benchmark,
        rating.question,
        rating.language,
        rating_set.splits,
        _hypothesis_tail,
        rating_set=rating_set,
    )


def _check_score_record(path: str, number: int, record: dict) -> None:
    """A score-mode record: a numeric `score`.

    Raises:
      DataError: the score is missing or not a number (predict-mode output, or scores with
        intermediates).
    """
    score = record.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        hint = " (predict-mode output? run infer.py with mode='score')" * ("prediction" in record)
        raise errors.DataError(path, number, "score", f"expected a number, got {score!r}{hint}")


def read_infer_output(paths: Sequence[str]) -> list[tuple[str, int, dict]]:
    """The score-mode records in dataset order, each as (file, line, record).

    Raises:
      UserError / DataError: for incomplete shard sets, bad JSON, or a record without a
        numeric `score` (predict-mode output, or scores with intermediates).
    """
    return infer_output.read_infer_records(
        paths,
        _check_score_record,
        "one T5X score-mode record per line (infer.py with mode='score')",
    )


@dataclasses.dataclass
class _TaskRows:
    """The rows a task read, in its order: `label`, `summary` and the slice fields each."""

    path: str
    rows: list[dict]
    dropped: int | None = None  # rating sets: rows dropped as the task drops them


def _seahorse_rows(task: ScoreTask, data_dir: str | None, split: str) -> _TaskRows:
    """Rows of `{data_dir}/{split}.jsonl` labelled for the question, in file order: the
    examples of the SEAHORSE and ICE tasks (`data.splits.labelled_rows`)."""
    if data_dir is None:
        raise errors.UserError(
            f"--data_dir is needed for {task.name}: the prepared data folder the infer run read"
        )
    path = splits.split_path(data_dir, split)
    if not infer_output.exists(path):
        raise errors.UserError(
            f"split file not found: {path} (written by `seahorse-t5x prepare`; --data_dir "
            "must be the folder the infer run read)"
        )
    field = splits.label_field(task.question)
    rows = [
        {**row, "label": int(row[field])}
        for row in splits.labelled_rows(
            path, task.question, task.language, opener=infer_output.open_text
        )
    ]
    if not rows and splits.is_empty(path, opener=infer_output.open_text):
        # The split the infer run read: its output cannot come from an empty file.
        raise splits.empty_split_error(path)
    return _TaskRows(f"{data_dir}/{split}.jsonl", rows)


def _rating_rows(task: ScoreTask, data_dir: str | None, split: str) -> _TaskRows:
    """Rows of the rating set's `{split}.jsonl` labelled 1 or 0 for the question (in the
    language), in file order, bad rows dropped and counted: the examples of its tasks
    (`tasks.ratings`)."""
    rating_set = task.rating_set
    folder = data_dir or rating_set.resolved_data_dir()
    path = os.path.join(folder, f"{split}.jsonl")
    if not infer_output.exists(path):
        raise errors.UserError(
            f"rating split file not found: {path} (--data_dir, or else the rating set "
            f"{rating_set.name!r}'s own folder, must be the folder the infer run read)"
        )
    # Local files as the task reads them (lines that are not UTF-8 dropped and counted).
    opener = infer_output.open_text if "://" in path else None
    rows, dropped = [], 0
    for _, row in rating_rows.iter_rows(path, rating_set.questions, opener):
        if isinstance(row, errors.DataError):
            dropped += 1
            continue
        label = row["labels"][task.question]
        if label is None or (task.language is not None and row["language"] != task.language):
            continue
        rows.append({**row, "label": label})
    return _TaskRows(path, rows, dropped)


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


def _log_p_no(path: str, number: int, record: dict) -> float | None:
    """The record's `aux.log_p_no` (None: T5X's own model wrote it, no aux value).

    Raises:
      DataError: an `aux` that is not an object, or a `log_p_no` that is not a number.
    """
    aux = record.get("aux")
    if aux is None:
        return None
    if not isinstance(aux, dict):
        raise errors.DataError(path, number, "aux", f"expected an object, got {aux!r}")
    if AUX_LOG_P_NO not in aux:
        return None
    value = aux[AUX_LOG_P_NO]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.DataError(
            path, number, f"aux.{AUX_LOG_P_NO}", f"expected a number, got {value!r}"
        )
    return float(value)


def _check_two_way(path: str, number: int, log_p_yes: float, log_p_no: float) -> None:
    """log P(yes) and log P(no) of one two-way softmax: their probabilities sum to 1.

    Raises:
      DataError: they do not (the score is then not LabelScoringModel's log P(yes)).
    """
    if not (math.isfinite(log_p_yes) and math.isfinite(log_p_no)):
        return  # counted as a non-finite score by the caller
    total = math.exp(log_p_yes) + math.exp(log_p_no)
    if abs(total - 1.0) > _TWO_WAY_TOLERANCE:
        raise errors.DataError(
            path,
            number,
            f"aux.{AUX_LOG_P_NO}",
            f"exp(score) + exp(log_p_no) = {total:.6g}, not 1: not the two-way log P(yes) "
            "and log P(no) of seahorse_t5x.model.t5x_models.LabelScoringModel",
        )


def _score_row(
    task: ScoreTask, row: dict, log_p_yes: float, two_way: bool, metric: str, split: str
) -> dict:
    rating = task.rating_set is not None
    return scorefiles.score_row(
        metric=metric,
        benchmark=task.benchmark,
        question=task.question,
        label=row["label"],
        score=math.exp(log_p_yes) if two_way else log_p_yes,
        details={
            "log_p_yes": log_p_yes,
            "score_kind": SCORE_KIND_P_YES if two_way else SCORE_KIND_LOG_P_TARGET,
        },
        # As `evaluate` writes a rating set's rows: 0/1 labels, the slice fields it has.
        label_kind=scorefiles.LABEL_KIND_BINARY if rating else None,
        slices={k: v for k, v in row.items() if v is not None} if rating else row,
        extra={"task": task.name, "split": split},
    )


def _checked_task(task: str, split: str, metric: str) -> ScoreTask:
    """`score_task(task)`, checked to have `split`, once `metric` is checked to name one.

    Raises:
      UserError: an empty metric name, an unknown task, or a split the task lacks.
    """
    if not metric.strip():
        raise errors.UserError("--metric must name the metric (e.g. seahorse_q4_xxl_t5x)")
    inferred = score_task(task)
    if split not in inferred.splits:
        raise errors.UserError(
            f"--split {split!r}: {task} has the splits {', '.join(inferred.splits)}"
        )
    return inferred


def _rows_for_records(task: ScoreTask, data_dir: str | None, split: str, records: int) -> _TaskRows:
    """The rows the task read (`_seahorse_rows`, `_rating_rows`), one per infer record.

    Raises:
      UserError: the rows are not as many as the records.
    """
    read_rows = _seahorse_rows if task.rating_set is None else _rating_rows
    source = read_rows(task, data_dir, split)
    if records != len(source.rows):
        where = f" in {task.language}" if task.language else ""
        raise errors.UserError(
            f"the infer output has {records} examples but {source.path} has "
            f"{len(source.rows)} rows labelled for {task.question_name}{where}: was it "
            f"inferred with task {task.name}, split {split} and this data folder?"
        )
    return source


def _checked_inputs(path: str, number: int, record: dict, target: str | None) -> dict:
    """The record's `inputs` (`{}` when it has none), its `targets_pretokenized`, when given,
    checked to be the task's constant target (`target`; None: any, as ICE's answer words).

    Raises:
      DataError: `inputs` is not an object, or holds another target.
    """
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
    return inputs


def _is_two_way(
    path: str, number: int, record: dict, log_p_yes: float, first_kind: bool | None
) -> bool:
    """Whether the record's score is `LabelScoringModel`'s two-way log P(yes) (it carries
    `aux.log_p_no`, and the two probabilities sum to 1) rather than T5X's log P(target).

    Raises:
      DataError: a kind other than the first record's (`first_kind`; None: this is the
        first), or a two-way pair whose probabilities do not sum to 1.
    """
    log_p_no = _log_p_no(path, number, record)
    two_way = log_p_no is not None
    if first_kind is not None and two_way != first_kind:
        raise errors.DataError(
            path,
            number,
            f"aux.{AUX_LOG_P_NO}",
            f"{'present' if two_way else 'missing'}, unlike the first record: the files "
            "mix two-way log P(yes) (LabelScoringModel) and whole-vocabulary log "
            "P(target) scores; convert each run's output on its own",
        )
    if two_way:
        _check_two_way(path, number, log_p_yes, log_p_no)
    return two_way


def convert(
    infer_paths: Sequence[str],
    task: str,
    data_dir: str | None,
    split: str,
    metric: str,
    join_by_position: bool = False,
) -> tuple[list[dict], dict[str, int | str]]:
    """Joins T5X score-mode output with the labels and slice fields of the rows the task read.

    A record with `aux.log_p_no` (`LabelScoringModel`, the run gins' model) becomes a row
    whose `score` is P(yes) = exp(score), after a check that exp(score) + exp(log_p_no) is
    1; a record without (T5X's own model) keeps its log P(target) as the score. Every
    record is checked against its row: its `inputs_pretokenized` must end with the
    row's summary as the task writes it (whitespace runs as one space), and its
    `targets_pretokenized`, when given, must be the task's constant target (`1`; any word
    for ICE). A record without `inputs_pretokenized` is refused unless `join_by_position`,
    and then counted as `unchecked`.

    Args:
      infer_paths: the infer output file, or every shard file of one run.
      task: the task that was inferred (`score_task`: SEAHORSE, ICE or a registered rating
        set's score task).
      data_dir: the data folder the inference read: the prepared SEAHORSE split files; for
        a rating task None means the set's own folder.
      split: the split that was inferred, one the task has (infer_score.gin's INFER_SPLIT).
      metric: the name the score rows carry (`metric` field).
      join_by_position: accept records without `inputs.inputs_pretokenized` (whose rows
        cannot be checked) and join them by position alone; counted as `unchecked`.

    Returns:
      (rows, counts): score-file rows in dataset order, and counts
      `{"examples", "non_finite_scores", "unchecked", "log_p_target"}` (`log_p_target`:
      rows whose score is T5X's whole-vocabulary log P(target), not P(yes)), with
      `first_non_finite` (`FILE:LINE` of the first NaN or infinite score) when there is
      one, and `dropped_rows` (bad rows of the split file, dropped as the task drops them) for a
      rating task.

    Raises:
      UserError / DataError: an unknown task or split, output and rows that do not line
        up (count, target or summary text), with the file and line of the first difference,
        a file mixing two-way and whole-vocabulary scores, or a two-way pair whose
        probabilities do not sum to 1.
    """
    inferred = _checked_task(task, split, metric)
    records = read_infer_output(infer_paths)
    source = _rows_for_records(inferred, data_dir, split, len(records))
    out = []
    non_finite = unchecked = 0
    first_non_finite: str | None = None
    two_way_kind: bool | None = None  # the first record's kind; every record must match it
    for (path, number, record), row in zip(records, source.rows, strict=True):
        inputs = _checked_inputs(path, number, record, inferred.target)
        row_name = (
            f"row {len(out) + 1} labelled for {inferred.question_name} in {split}.jsonl for "
            f"{task} (gem_id {row.get('gem_id')!r})"
        )
        unchecked += not _check_joined_text(
            path, number, inputs, inferred.tail(row), row_name, join_by_position
        )
        score = float(record["score"])
        two_way = _is_two_way(path, number, record, score, two_way_kind)
        if two_way_kind is None:
            two_way_kind = two_way
        if not math.isfinite(score):
            non_finite += 1
            first_non_finite = first_non_finite or f"{path}:{number}"
            score = math.nan
        out.append(_score_row(inferred, row, score, two_way, metric, split))
    counts: dict[str, int | str] = {
        "examples": len(out),
        "non_finite_scores": non_finite,
        "unchecked": unchecked,
        "log_p_target": 0 if two_way_kind else len(out),
    }
    if first_non_finite is not None:
        counts["first_non_finite"] = first_non_finite
    if source.dropped is not None:
        counts["dropped_rows"] = source.dropped
    return out, counts


def join_warnings(counts: Mapping[str, int | str]) -> list[str]:
    """What the user should know about a join's counts (`convert`), one line each."""
    warnings = []
    if counts.get("log_p_target"):
        warnings.append(
            f"the {counts['log_p_target']} scores carry no aux.log_p_no: they are T5X's log "
            "P(target) over the whole vocabulary (a model other than seahorse_t5x.model.t5x_models."
            "LabelScoringModel), written as they are (score_kind log_p_target), not as the "
            "two-way P(yes) of `score`; infer with runs/infer_score.gin for P(yes)"
        )
    if counts.get("dropped_rows"):
        warnings.append(
            f"{counts['dropped_rows']} rows of the rating split file were dropped, as the task "
            "drops them (seahorse_t5x.tasks.ratings.drop_report lists them)"
        )
    if counts["unchecked"]:
        warnings.append(
            f"{counts['unchecked']} rows were joined by position without a check "
            "(--join_by_position)"
        )
    if counts["non_finite_scores"]:
        warnings.append(
            f"{counts['non_finite_scores']} scores were NaN or infinite, the first at "
            f"{counts.get('first_non_finite')}; written as null (the report counts and drops "
            "them)"
        )
    return warnings
