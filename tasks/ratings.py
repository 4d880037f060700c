"""A user's own rating data as SeqIO tasks, registered with one call (`register_rating_tasks`).

Rows of `{data_dir}/{split}.jsonl` rated for questions of the user's own (format and checks:
`seahorse_t5x.data.rating_rows`) become tasks shaped exactly like SEAHORSE's: the same
premise/hypothesis chain (`premise: {article} hypothesis: {summary}`), summary-keeping
truncation (gin `seahorse_t5x.tasks.preprocessors.configured_truncation.mode` as for SEAHORSE),
postprocessors and metrics (score tasks: `postprocessors.score_postprocessor` and
`seqio_metrics.score_metrics`; the others `predict_postprocessor` and `predict_metrics`;
`premise_hypothesis.add_premise_hypothesis_task`). For a set `chat` with the question `polite`:

  chat_polite                  target "1"/"0" from the `polite` rating (training, predict)
  chat_polite.{lang}           the same, one language (when the rows carry `language`)
  chat_all_polite              multi-question input `question: {prompt} premise: ...`
  chat_polite_score            T5X score mode: constant target "1", gold label in `label`
  chat_polite_score.{lang}     the same, one language
  chat_all_polite_score        score mode for the multi-question model
  chat_all                     mixture of chat_all_{q} for every question, rate = train rows
  chat_all_score               mixture of chat_all_{q}_score (evaluation)

Nothing is registered at import; nothing is read at registration unless the languages are
left to be found in the data (`languages=None`). Bad rows are dropped and counted (logged
once per file when it is first read; `drop_report(name)` returns the counts).

The examples carry SEAHORSE's features (`inputs`, `targets`, `label`, `gem_id`, `language`,
`dataset`, `system`, the truncation counters) but no int `question`: the task name says
which question. A registered set is recorded in `seahorse_t5x.data.ratings`
(`get_rating_set(name)`, `rating_task_of(task_name)`), so that in the same process
`evaluate` writes the score rows of `chat_polite_score` (and of `chat_all_score`'s tasks)
with `"benchmark": "chat"`, `"question": "polite"` and `"label_kind": "binary"`; `report`
gives the set its own table (rows = metrics, one column per question, ρ/roc with bootstrap
intervals). The trainer validates `chat_polite` on `chat_polite_score` and `chat_all` on
`chat_all_score`: the `_score` suffix is how it finds them. T5X and `train` see the tasks
when a gin file imports the module that registers them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping, Sequence

import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x import constants, errors
from seahorse_t5x.data import rating_rows, ratings
from seahorse_t5x.formats import trained_inputs, vocab
from seahorse_t5x.tasks import premise_hypothesis

# The intermediate schema of preprocessors.py with the question's prompt for the
# multi-question input. No int `question`: a rating question is a name, and the task name
# says which (`data.ratings.rating_task_of`).
_OUTPUT_SIGNATURE = {
    **{k: v for k, v in premise_hypothesis.SCHEMA_SIGNATURE.items() if k != "question"},
    "question_prompt": tf.TensorSpec((), tf.string),
}


def _gfile_opener(path: str):
    return tf.io.gfile.GFile(path, "r")


def _opener(path: str) -> rating_rows.Opener | None:
    # Local files go through fileio (lines that are not UTF-8 are dropped and counted);
    # remote folders (gs://) through tf.io.gfile.
    return _gfile_opener if "://" in path else None


def _rating_set(name: str) -> ratings.RatingSet:
    rating_set = ratings.get_rating_set(name)
    if rating_set is None:
        raise errors.UserError(
            f"no rating set named {name!r} is registered (register_rating_tasks registers one)"
        )
    return rating_set


def _split_path(rating_set: ratings.RatingSet, split: str) -> str:
    path = rating_set.split_path(split)
    if not tf.io.gfile.exists(path):
        raise errors.UserError(
            f"rating split file not found: {path} (the rating set {rating_set.name!r} reads "
            f"{', '.join(s + '.jsonl' for s in rating_set.splits)} in its data folder; pass "
            "splits= to register_rating_tasks for a set without some of them)"
        )
    return path


@functools.cache
def _read(path: str, size: int, mtime: int, questions: tuple[str, ...]) -> rating_rows.RatingsFile:
    """Reads a rating split file once per process (again when it changes) and logs its
    drop report."""
    del size, mtime  # cache keys only
    result = rating_rows.read_file(path, questions, _opener(path))
    if result.dropped or result.unasked_questions() or not result.rows_read:
        logging.warning("%s", result.summary())
    else:
        logging.info("%s", result.summary())
    return result


def _ratings_file(rating_set: ratings.RatingSet, split: str) -> rating_rows.RatingsFile:
    path = _split_path(rating_set, split)
    stat = tf.io.gfile.stat(path)
    return _read(path, stat.length, stat.mtime_nsec, rating_set.questions)


def ratings_file(name: str, split: str) -> rating_rows.RatingsFile:
    """The counts and drops of one split file of a registered set (read once, then cached).

    Raises:
      UserError: the set is not registered, has no data folder, or the file is missing.
    """
    return _ratings_file(_rating_set(name), split)


def drop_report(name: str) -> dict[str, dict]:
    """Every split file of a registered set, read and counted: per split, `path`,
    `rows_read`, `rows_kept`, `rows_dropped` (kept + dropped = read), `dropped_by_field`,
    `drop_examples` (`file:line field 'polite': reason`), `labels` (yes/no/null/missing per
    question) and `languages`.

    Raises:
      UserError: the set is not registered, has no data folder, or a file is missing.
    """
    return {split: ratings_file(name, split).as_dict() for split in _rating_set(name).splits}


def _examples(
    rating_set: ratings.RatingSet, split: str, question: str, language: str | None
) -> Iterator[dict]:
    path = _split_path(rating_set, split)
    prompt = rating_set.prompts[question]
    for _, row in rating_rows.iter_rows(path, rating_set.questions, _opener(path)):
        if isinstance(row, errors.DataError):
            continue  # counted in the file's drop report
        label = row["labels"][question]
        if label is None or (language is not None and row["language"] != language):
            continue
        yield {
            "premise": row["article"],
            "hypothesis": row["summary"],
            "label": label,
            "question_prompt": prompt,
            "gem_id": row["gem_id"],
            "language": row["language"] or "",
            "dataset": row["dataset"] or "",
            "system": row["system"] or "",
        }


def examples(name: str, split: str, question: str, language: str | None = None) -> Iterator[dict]:
    """The examples of a question's tasks in `split` (in `language`, if given): the rows
    labelled 1 or 0 for it, in file order, in the intermediate schema of
    `seahorse_t5x.tasks.preprocessors`, as plain Python.

    Raises:
      UserError: the set is not registered, has no data folder, or the file is missing.
    """
    return _examples(_rating_set(name), split, question, language)


def rating_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    rating_set: ratings.RatingSet,
    question: str,
    language: str | None = None,
) -> tf.data.Dataset:
    """The rows of a set's `{split}.jsonl` labelled for `question`, in file order.

    Raises:
      UserError: the set has no data folder, or the file is missing.
    """
    del shuffle_files, seed  # one file per split, read in order; SeqIO shuffles examples
    _ratings_file(rating_set, split)  # reads, counts and logs the file before tf.data reads it
    return tf.data.Dataset.from_generator(
        functools.partial(_examples, rating_set, split, question, language),
        output_signature=_OUTPUT_SIGNATURE,
    )


class RatingSplitSource(seqio.FunctionDataSource):
    """The rows of a rating set labelled for one question (and language).

    `num_input_examples(split)` is counted from the file when asked (the data folder may
    be unknown at registration), so SeqIO's `mixing_rate_num_examples` works.
    """

    def __init__(
        self, rating_set: ratings.RatingSet, question: str, language: str | None = None
    ) -> None:
        self.rating_set = rating_set
        self.question = question
        self.language = language
        super().__init__(
            dataset_fn=functools.partial(
                rating_dataset, rating_set=rating_set, question=question, language=language
            ),
            splits=rating_set.splits,
        )

    def num_input_examples(self, split: str) -> int:
        return _ratings_file(self.rating_set, split).labelled_row_count(
            self.question, self.language
        )


def _check_prompts(prompts: Mapping[str, str] | None, questions: tuple[str, ...]) -> dict[str, str]:
    prompts = dict(prompts or {})
    unknown = sorted(set(prompts) - set(questions))
    if unknown:
        raise errors.UserError(
            f"prompts for {', '.join(map(repr, unknown))}, which are not among the questions "
            f"{', '.join(questions)}"
        )
    for question, prompt in prompts.items():
        if not isinstance(prompt, str) or not prompt.strip():
            raise errors.UserError(
                f"prompt of {question!r}: expected a non-empty string, got {prompt!r}"
            )
    return {q: prompts.get(q, q) for q in questions}


def _check_splits(splits: Sequence[str]) -> tuple[str, ...]:
    if isinstance(splits, str):
        splits = (splits,)
    splits = tuple(splits)
    wrong = [s for s in splits if s not in constants.SPLITS]
    if not splits or wrong or len(set(splits)) != len(splits):
        raise errors.UserError(
            f"splits: expected some of {', '.join(constants.SPLITS)}, each once; got {splits!r}"
        )
    return splits


def _languages_in_data(rating_set: ratings.RatingSet) -> tuple[str, ...]:
    try:
        files = [_ratings_file(rating_set, split) for split in rating_set.splits]
    except errors.UserError as e:
        raise errors.UserError(
            f"{e} (languages=None reads the split files to find their languages; pass "
            "languages=[...], or () for none, to register without reading them)"
        ) from None
    found = {lang for f in files for lang in f.languages if lang is not None}
    return tuple(sorted(found))


def _add_tasks(rating_set: ratings.RatingSet, output_features: Mapping[str, seqio.Feature]) -> None:
    for question in rating_set.questions:
        for score in (False, True):
            for language, multi in (
                (None, False),
                *((lang, False) for lang in rating_set.languages),
                (None, True),
            ):
                premise_hypothesis.add_premise_hypothesis_task(
                    ratings.rating_task(
                        rating_set.name,
                        question,
                        language=language,
                        score=score,
                        multi_question=multi,
                    ),
                    RatingSplitSource(rating_set, question, language),
                    output_features,
                    score_mode=score,
                    multi_question=multi,
                )
    train, score = rating_set.mixture_names
    seqio.MixtureRegistry.add(
        train,
        [
            ratings.rating_task(rating_set.name, q, multi_question=True)
            for q in rating_set.questions
        ],
        # Proportional to each question's labelled train rows (counted when mixing).
        default_rate=seqio.mixing_rate_num_examples if "train" in rating_set.splits else 1.0,
    )
    # Evaluation only (T5X evaluates each sub-task of a mixture on its own).
    seqio.MixtureRegistry.add(
        score,
        [
            ratings.rating_task(rating_set.name, q, score=True, multi_question=True)
            for q in rating_set.questions
        ],
        default_rate=1.0,
    )


def _new_rating_set(
    name: str,
    data_dir: str | os.PathLike | None,
    questions: Sequence[str],
    languages: Sequence[str] | None,
    prompts: Mapping[str, str] | None,
    splits: Sequence[str],
) -> ratings.RatingSet:
    """The rating set `register_rating_tasks` is given, its names checked, its languages
    found in the data when not given, none of its names registered already.

    Raises:
      UserError: as `register_rating_tasks` says.
    """
    name, questions, _ = ratings.check_rating_names(name, questions)
    if isinstance(languages, str):
        raise errors.UserError(
            f"languages: expected a list of codes such as ['en'], got {languages!r}"
        )
    if languages is not None:
        _, _, languages = ratings.check_rating_names(name, questions, languages)
    prompts = _check_prompts(prompts, questions)
    splits = _check_splits(splits)
    if ratings.get_rating_set(name) is not None:
        raise errors.UserError(
            f"a rating set named {name!r} is registered already; call "
            "seahorse_t5x.tasks.ratings.remove_rating_tasks(name) first to register it again"
        )
    rating_set = ratings.RatingSet(
        name=name,
        questions=questions,
        prompts=prompts,
        languages=(),
        splits=splits,
        data_dir=None if data_dir is None else os.fspath(data_dir),
        mixture_names=(ratings.rating_mixture(name), ratings.rating_mixture(name, score=True)),
    )
    if languages is None:
        languages = _languages_in_data(rating_set)
    task_list = tuple(ratings.rating_task_names(name, questions, languages))
    rating_set = dataclasses.replace(rating_set, languages=tuple(languages), task_names=task_list)
    taken = set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())
    clashes = [n for n in rating_set.names if n in taken]
    if clashes:
        raise errors.UserError(
            f"rating set {name!r}: SeqIO already has {', '.join(clashes[:5])}"
            + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
            + "; choose another name or question"
        )
    return rating_set


def register_rating_tasks(
    name: str,
    data_dir: str | os.PathLike | None,
    questions: Sequence[str],
    *,
    languages: Sequence[str] | None = None,
    vocabulary: seqio.Vocabulary | str | None = None,
    prompts: Mapping[str, str] | None = None,
    splits: Sequence[str] = constants.SPLITS,
) -> list[str]:
    """Registers SeqIO tasks and mixtures for a user's own rating data, like SEAHORSE's.

    The data is a folder of JSON Lines files `{data_dir}/{split}.jsonl`, one object per
    rated summary: `article`, `summary`, one field per question holding 1 (Yes), 0 (No) or
    null, optional slice fields (`seahorse_t5x.data.rating_rows`). A row that breaks these
    rules is dropped and counted with its file, line and field: logged once per file when
    it is first read, and returned by `seahorse_t5x.tasks.ratings.drop_report(name)` (per
    split: rows read, kept and dropped; drops per field; yes/no/null counts per question).

    Example (docs/tasks.md, "Your own rating data")::

      from seahorse_t5x.tasks import register_rating_tasks

      register_rating_tasks("chat", "/data/chat_ratings", ["polite", "formal"])
      # -> ["chat_polite", "chat_polite.de", ..., "chat_all", "chat_all_score"]

    For each question it registers the six kinds of task the module's docstring lists
    (training, per language, multi-question, and their score tasks for `evaluate`), and the
    mixtures `{name}_all` (the `{name}_all_{q}` tasks, each at the rate of its labelled train
    rows) and `{name}_all_score` (their score tasks), shaped as SEAHORSE's are. A task's
    examples are the rows labelled 1 or 0 for its question, in file order.
    The set is recorded in `seahorse_t5x.data.ratings`: what `evaluate`, `report` and the
    trainer then do with its tasks is the module docstring's.

    Args:
      name: the set's name, a lowercase identifier (`chat`); also the `benchmark` of its
        score rows. Not one of the project's own (`seahorse`, `mface`, `true`, `metal`, ...).
      data_dir: the folder of the split files, looked up when a dataset is built (a
        `gs://` folder works). None: gin
        `seahorse_t5x.data.ratings.rating_data_dirs.paths = {"chat": PATH}`, else the
        environment variable `SEAHORSE_RATINGS_DIR_{NAME}` (`SEAHORSE_RATINGS_DIR_CHAT`).
      questions: the question names, lowercase identifiers that are also the rows' label
        fields (`["polite", "formal"]`); not `all`, `score`, `q4`-like, starting with
        `all_` or ending with `_score`, nor a row field such as `article`.
      languages: the languages that get their own tasks. None: every `language` found in
        the rows (the split files are read now, so the folder must be reachable); a list to
        register without reading; () for none.
      vocabulary: the inputs' and targets' vocabulary: None for the project's
        (`vocab.deferred_vocabulary()`: gin, SEAHORSE_VOCAB, else mT5's, chosen when used),
        a SentencePiece model path or `demo`, or a `seqio.Vocabulary`. It must be the
        model's.
      prompts: the text that names each question in the multi-question inputs
        (`{"polite": "polite to the reader"}`); by default the question's name.
      splits: the split files the set has (any of train, validation, test).

    Returns:
      The registered names: the tasks in the order above (per question: training then
      score mode), then `{name}_all` and `{name}_all_score`.

    Raises:
      UserError: a name, question, language, prompt or split that is not valid (nothing
        is registered then), a name already registered (call `remove_rating_tasks` first),
        or, with `languages=None`, a data folder that is not set or a missing split file.
    """
    rating_set = _new_rating_set(name, data_dir, questions, languages, prompts, splits)
    output_features = premise_hypothesis.output_features(
        None if vocabulary is None else vocab.get_vocabulary(vocabulary)
    )
    _register(rating_set, output_features)
    return rating_set.names


def _register(rating_set: ratings.RatingSet, output_features: Mapping) -> None:
    """Adds the set's tasks and mixtures to SeqIO (none of them, if one fails) and records
    the set in `seahorse_t5x.data.ratings`."""
    try:
        _add_tasks(rating_set, output_features)
    except Exception:
        _remove_from_seqio(rating_set.names)
        raise
    ratings.add_rating_set(rating_set)
    logging.info(
        "registered the rating set %s: %d tasks and 2 mixtures (questions %s, languages %s)",
        rating_set.name,
        len(rating_set.task_names),
        ", ".join(rating_set.questions),
        ", ".join(rating_set.languages) or "none",
    )


def inputs_meta(task_or_mixture: str) -> dict:
    """What a model trained on a registered rating set's task or mixture records about its
    inputs (`formats.trained_inputs`): `questions` (names), and `question_prompts` when its
    inputs name the question (`chat_all`, `chat_all_polite`); `{}` for any other name."""
    task = ratings.rating_task_of(task_or_mixture)
    if task is None or task.score:
        return {}
    rating_set = ratings.get_rating_set(task.benchmark)
    questions = list(rating_set.questions) if task.question is None else [task.question]
    meta: dict = {trained_inputs.META_QUESTIONS: questions}
    if task.multi_question:
        meta[trained_inputs.META_QUESTION_PROMPTS] = {q: rating_set.prompts[q] for q in questions}
    return meta


def _remove_from_seqio(task_or_mixture_names: Sequence[str]) -> None:
    for name in task_or_mixture_names:
        seqio.MixtureRegistry.remove(name)
        seqio.TaskRegistry.remove(name)


def remove_rating_tasks(name: str) -> list[str]:
    """Removes a registered rating set's tasks and mixtures from SeqIO and forgets the set,
    so that it can be registered again (a notebook cell run twice, a test).

    Returns:
      The names removed (none when no set of that name is registered).
    """
    rating_set = ratings.remove_rating_set(name)
    if rating_set is None:
        return []
    _remove_from_seqio(rating_set.names)
    return rating_set.names
