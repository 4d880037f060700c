"""SEAHORSE SeqIO tasks: one binary metric per question, per language, multi-question, score.

Registered names (96 tasks, 2 mixtures; docs/tasks.md describes each):

  seahorse_q{n}                 n = 1..6, target "1"/"0" from the q{n} rating
  seahorse_q{n}.{lang}          the same, one language (de, en, es, ru, tr, vi)
  seahorse_all_q{n}             multi-question input `question: {prompt} premise: ...`
  seahorse_q{n}_score           T5X score mode: constant target "1", gold label in `label`
  seahorse_q{n}_score.{lang}    the same, one language
  seahorse_all_q{n}_score       score mode for the multi-question model
  seahorse_all                  mixture of seahorse_all_q1..q6, rate = labelled train rows
  seahorse_all_score            mixture of seahorse_all_q1_score..q6_score (evaluation)

Every task reads `{data_dir}/{split}.jsonl` (written by `seahorse-t5x prepare`); the
directory is looked up when a dataset is built, never at import: gin
`seahorse_t5x.tasks.seahorse.data_dir.path`, else env SEAHORSE_DATA_DIR. Rows whose label for
the task's question is null (e.g. Q2..Q6 after a "No" for Q1) are skipped. Inputs keep the
whole summary and cut the article; gin `seahorse_t5x.tasks.preprocessors.configured_truncation.mode
= "right"` gives the paper's right truncation instead.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import gin
import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x import constants, errors
from seahorse_t5x.data import splits
from seahorse_t5x.formats import task_names as names
from seahorse_t5x.tasks import premise_hypothesis

# The intermediate schema of preprocessors.py, with the question's prompt for the
# multi-question input.
_OUTPUT_SIGNATURE = {
    **premise_hypothesis.SCHEMA_SIGNATURE,
    "question_prompt": tf.TensorSpec((), tf.string),
}


@gin.configurable(module="seahorse_t5x.tasks.seahorse")
def data_dir(path: str | None = None) -> str:
    """The folder holding the joined split files: gin binding, else env SEAHORSE_DATA_DIR.

    Only the SEAHORSE tasks (and the ICE tasks built on them) call it, when their dataset
    is built; a run on other tasks needs neither.

    Raises:
      UserError: if neither is set, naming both ways to set it.
    """
    chosen = path or os.environ.get(constants.ENV_DATA_DIR)
    if not chosen:
        env = constants.ENV_DATA_DIR
        raise errors.UserError(
            f"no SEAHORSE data folder: set the environment variable {env} (or, in a T5X run, "
            f'the gin macro: --gin.{env}=\\"DIR\\") to the output folder of '
            "`seahorse-t5x prepare`"
        )
    return chosen


def split_path(split: str) -> str:
    """`{data_dir()}/{split}.jsonl`, checked to exist.

    Raises:
      UserError: if the file is missing, naming it and the command that writes it.
    """
    path = splits.split_path(data_dir(), split)
    if not tf.io.gfile.exists(path):
        raise errors.UserError(
            f"SEAHORSE split file not found: {path}. It is written by `seahorse-t5x prepare` "
            f"(see `seahorse-t5x prepare --help`); point {constants.ENV_DATA_DIR} at that "
            "command's output folder."
        )
    return path


def _open_gfile(path: str):
    return tf.io.gfile.GFile(path, "r")


@functools.cache
def _split_summary(path: str, size: int, mtime: float) -> dict[tuple[int, str], int]:
    """Validates a split file once and counts its labelled rows per (question, language).

    Keyed by size and mtime, so a rewritten file is read again. Reading the whole file
    before the dataset is built turns a bad row into a clear `DataError` (file, line,
    field) instead of an error deep inside tf.data.
    """
    del size, mtime  # cache keys only
    counts = splits.label_counts(path, opener=_open_gfile)
    if not counts and splits.is_empty(path, opener=_open_gfile):
        # `prepare` writes an empty split when it keeps no row of it: named before its
        # tasks are found to have no examples.
        logging.warning("%s", splits.empty_split_error(path))
    return counts


def labelled_row_count(split: str, question: int, language: str | None = None) -> int:
    """Rows of `split` with a q{question} label (in `language`, if given)."""
    path = split_path(split)
    stat = tf.io.gfile.stat(path)
    counts = _split_summary(path, stat.length, stat.mtime_nsec)
    return sum(n for (q, lang), n in counts.items() if q == question and language in (None, lang))


def _rows(path: str, question: int, language: str | None) -> Iterator[dict]:
    prompt = constants.QUESTION_PROMPTS[question]
    for row in splits.labelled_rows(path, question, language, opener=_open_gfile):
        yield {
            "premise": row["article"],
            "hypothesis": row["summary"],
            "label": row[splits.label_field(question)],
            "question": question,
            "question_prompt": prompt,
            "gem_id": row["gem_id"],
            "language": row["language"],
            "dataset": row["dataset"],
            "system": row["system"],
        }


def examples(split: str, question: int, language: str | None = None) -> Iterator[dict]:
    """The examples of `question`'s tasks in `split` (in `language`, if given), in the
    intermediate schema of `seahorse_t5x.tasks.preprocessors`, in file order, as plain Python.

    Raises:
      UserError: if the data folder is not set or the split file is missing.
      DataError: for a malformed row (file, line and field named).
    """
    return _rows(split_path(split), question, language)


def seahorse_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    question: int,
    language: str | None = None,
) -> tf.data.Dataset:
    """The rows of `{data_dir()}/{split}.jsonl` labelled for `question`, in file order.

    Each example follows the intermediate schema of `seahorse_t5x.tasks.preprocessors`
    (premise = article, hypothesis = summary, label = the q{question} rating).

    Raises:
      UserError: if the data folder is not set or the split file is missing.
      DataError: for a malformed row (file, line and field named).
    """
    del shuffle_files, seed  # one file per split, read in order; SeqIO shuffles examples
    path = split_path(split)
    labelled_row_count(split, question, language)  # validates the file before tf.data reads it
    return tf.data.Dataset.from_generator(
        functools.partial(_rows, path, question, language),
        output_signature=_OUTPUT_SIGNATURE,
    )


class SeahorseSplitSource(seqio.FunctionDataSource):
    """The rows labelled for one question (and language) in the joined split files.

    A `seqio.FunctionDataSource` whose `num_input_examples(split)` is counted from the file
    when asked (the data folder is unknown at import), so SeqIO's
    `mixing_rate_num_examples` works on these tasks.
    """

    def __init__(self, question: int, language: str | None = None) -> None:
        self.question = question
        self.language = language
        super().__init__(
            dataset_fn=functools.partial(seahorse_dataset, question=question, language=language),
            splits=constants.SPLITS,
        )

    def num_input_examples(self, split: str) -> int:
        return labelled_row_count(split, self.question, self.language)


def _add_task(
    question: int,
    *,
    language: str | None = None,
    score_mode: bool = False,
    multi_question: bool = False,
) -> None:
    premise_hypothesis.add_premise_hypothesis_task(
        names.seahorse_task(
            question, language=language, score=score_mode, multi_question=multi_question
        ),
        SeahorseSplitSource(question, language),
        premise_hypothesis.output_features(),
        score_mode=score_mode,
        multi_question=multi_question,
    )


def _task_settings() -> list[dict]:
    """The keyword arguments of every task this module registers, in registration order."""
    settings = []
    for question in constants.QUESTIONS:
        for score_mode in (False, True):
            settings.append({"question": question, "score_mode": score_mode})
            settings.extend(
                {"question": question, "score_mode": score_mode, "language": lang}
                for lang in constants.LANGUAGES
            )
            settings.append(
                {"question": question, "score_mode": score_mode, "multi_question": True}
            )
    return settings


def task_names() -> list[str]:
    """Every SEAHORSE task name this module registers, in registration order."""
    return [
        names.seahorse_task(
            s["question"],
            language=s.get("language"),
            score=s["score_mode"],
            multi_question=s.get("multi_question", False),
        )
        for s in _task_settings()
    ]


MIXTURE_NAMES: tuple[str, ...] = names.SEAHORSE_MIXTURES


def _register() -> None:
    for settings in _task_settings():
        _add_task(**settings)
    seqio.MixtureRegistry.add(
        MIXTURE_NAMES[0],
        [names.seahorse_task(q, multi_question=True) for q in constants.QUESTIONS],
        # Proportional to each question's labelled train rows (counted when mixing).
        default_rate=seqio.mixing_rate_num_examples,
    )
    # Evaluation only (T5X evaluates each sub-task of a mixture on its own), so the rate
    # does not read the train split.
    seqio.MixtureRegistry.add(
        MIXTURE_NAMES[1],
        [names.seahorse_task(q, score=True, multi_question=True) for q in constants.QUESTIONS],
        default_rate=1.0,
    )


_register()
