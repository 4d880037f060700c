"""Distillation tasks: a teacher metric's P(yes) as soft targets, registered with one call.

`register_distillation_tasks(name, scores, questions)` reads a teacher's scores
(`seahorse_t5x.data.teacher_scores`: `score --questions ...` output, or score-file rows
joined to their pairs) and registers training tasks shaped like SEAHORSE's (the same
premise/hypothesis chain and truncation) whose examples also carry the teacher's P(yes)
as the soft-target feature (`seahorse_t5x.formats.soft_targets`). For `name` = `distil`
and questions 1 and 4:

  distil_q1, distil_q4          target "1"/"0" + soft target (training split only)
  distil_all_q1, distil_all_q4  the multi-question input `question: {prompt} premise: ...`
  distil_all                    mixture of distil_all_q*, rate = pairs per question

The questions are SEAHORSE's (1..6) or a registered rating set's (`polite`: `distil_polite`,
`distil_all_polite`, with the set's prompt). The hard target is the human label where the
row has one (and `human_labels`), else the teacher's argmax (P(yes) >= 0.5). Validation and
test go through the questions' own score tasks (`validation_task`: `seahorse_q4_score` for
`distil_q4`, `seahorse_all_q4_score` for `distil_all_q4`, `tone_all_polite_score` for
`distil_all_polite`), so the student is measured against human labels like any metric.

The teacher's files are joined once into a split file (`data.teacher_scores
.join_teacher_scores`: `{joined_dir}/train.jsonl` and its report) and the tasks read the pairs
from there, so a set of 10^7 pairs registers without holding them in memory; registering
again with the same files and settings reuses the join.

Both trainers train a batch with soft targets on the distillation loss
(`seahorse_t5x.model.distillation`): the local runner's `train` and T5X with
`gin/runs/finetune.gin` (`LabelScoringModel`). In a T5X gin the registration is a
configurable that returns the mixture's name (`experiments/distill_*.gin`):

    MIXTURE_OR_TASK_NAME = @distillation.distillation_task()
    distillation.distillation_task.scores = %TEACHER_SCORES
    distillation.distillation_task.model_dir = %MODEL_DIR

With `model_dir` it also writes what the student's inputs are into
`MODEL_DIR/seahorse_meta.json` (`formats.trained_inputs`), which `score` reads beside a T5X
`checkpoint_N` as it reads a runner checkpoint's meta.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gin
import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.arguments import Question
from seahorse_t5x.data import ratings, teacher_scores
from seahorse_t5x.formats import soft_targets, trained_inputs
from seahorse_t5x.formats import task_names as names
from seahorse_t5x.tasks import premise_hypothesis

SPLIT = "train"
_CODE = "soft_target_code"
_OUTPUT_SIGNATURE = {
    **premise_hypothesis.SCHEMA_SIGNATURE,
    "question_prompt": tf.TensorSpec((), tf.string),
    _CODE: tf.TensorSpec((), tf.int32),
}


@dataclasses.dataclass(frozen=True)
class DistillationSet:
    """A registered set: its settings, the joined pairs' folder and counts, the rating set
    of its questions (None: SEAHORSE's), the prompts that name them, and its names."""

    name: str
    settings: tuple
    joined_dir: str
    scores: teacher_scores.TeacherScores
    rating_set: str | None
    prompts: Mapping[Question, str]
    names: tuple[str, ...]


_SETS: dict[str, DistillationSet] = {}
_VALIDATION: dict[str, str] = {}


def soft_target_feature() -> seqio.Feature:
    """The soft-target output feature: int32 codes, no EOS, never a vocabulary's tokens."""
    return seqio.Feature(
        vocabulary=seqio.PassThroughVocabulary(size=soft_targets.SCALE + soft_targets.OFFSET + 1),
        add_eos=False,
        required=False,
        dtype=tf.int32,
    )


def add_soft_targets(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`soft_targets` beside the finished `targets`: the example's code at the answer
    position (position 0), `NO_SOFT_TARGET` at every later target token."""

    def add(example):
        length = tf.shape(example["targets"])[0]
        rest = tf.fill(
            [tf.maximum(length - 1, 0)], tf.constant(soft_targets.NO_SOFT_TARGET, tf.int32)
        )
        codes = tf.concat([tf.reshape(example[_CODE], [1]), rest], axis=0)[:length]
        return {**example, soft_targets.FEATURE: codes}

    return dataset.map(add, num_parallel_calls=tf.data.AUTOTUNE)


def _opener(paths: Sequence[str]):
    """tf.io.gfile for remote paths (gs://), else the package's local reader."""
    if any("://" in path for path in paths):
        return lambda path: tf.io.gfile.GFile(path, "r")
    return None


@contextlib.contextmanager
def _gfile_writer(path: str):
    """A remote output written under a temporary name and renamed when complete (a name of
    its own: several hosts may join at once)."""
    partial = f"{path}.{secrets.token_hex(4)}.partial"
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(partial, "w") as out:
        yield out
    tf.io.gfile.rename(partial, path, overwrite=True)


def _examples(dset: DistillationSet, question: Question) -> Iterator[dict]:
    prompt = dset.prompts[question]
    number = question if isinstance(question, int) else 0  # a rating question is a name
    opener = _opener([dset.joined_dir])
    for example in teacher_scores.iter_joined(dset.joined_dir, question, opener):
        p = example.p_yes[question]
        label = example.labels.get(question, int(p >= 0.5))
        yield {
            "premise": example.article,
            "hypothesis": example.summary,
            "label": label,
            "question": number,
            "question_prompt": prompt,
            **example.metadata,
            _CODE: soft_targets.encode(p),
        }


def _dataset(
    split: str, shuffle_files: bool, seed: int | None = None, *, dset, question: Question
) -> tf.data.Dataset:
    del shuffle_files, seed  # one split file, read in order; SeqIO shuffles examples
    if split != SPLIT:
        raise errors.UserError(
            f"distillation tasks have a {SPLIT!r} split only (validation and test go through "
            f"the questions' score tasks), got {split!r}"
        )
    return tf.data.Dataset.from_generator(
        functools.partial(_examples, dset, question), output_signature=_OUTPUT_SIGNATURE
    )


class TeacherSource(seqio.FunctionDataSource):
    """The joined pairs with a teacher P(yes) for one question, read from the split file;
    `train` split only."""

    def __init__(self, dset: DistillationSet, question: Question) -> None:
        self.dset = dset
        self.question = question
        super().__init__(
            dataset_fn=functools.partial(_dataset, dset=dset, question=question),
            splits=(SPLIT,),
        )

    def num_input_examples(self, split: str) -> int:
        return self.dset.scores.count(self.question) if split == SPLIT else 0


def task_name(name: str, question: Question, multi_question: bool = False) -> str:
    """`{name}_q4` (`{name}_polite` for a rating set's question), or `{name}_all_q4` for the
    multi-question input."""
    return f"{name}_{'all_' if multi_question else ''}{arguments.question_key(question)}"


def validation_task(task_or_mixture: str) -> str | None:
    """The score task that measures a distillation task's student (SEAHORSE's or the rating
    set's), or None for a name that is not a registered distillation task."""
    return _VALIDATION.get(task_or_mixture)


def _set_of(task_or_mixture: str) -> tuple[DistillationSet, Question | None] | None:
    """The registered set a name is of, and its question (None: the `_all` mixture)."""
    for dset in _SETS.values():
        if task_or_mixture == f"{dset.name}_all":
            return dset, None
        for question in dset.prompts:
            if task_or_mixture in (task_name(dset.name, question, m) for m in (False, True)):
                return dset, question
    return None


def inputs_task_of(task_or_mixture: str) -> str | None:
    """The task whose inputs a registered distillation task or mixture has: SEAHORSE's
    (`distil_all` -> `seahorse_all`, `distil_all_q4` -> `seahorse_all_q4`, `distil_q4` ->
    `seahorse_q4`) or its rating set's (`distil_all` -> `tone_all`); None for any other
    name."""
    found = _set_of(task_or_mixture)
    if found is None:
        return None
    dset, _ = found
    if task_or_mixture == f"{dset.name}_all":
        if dset.rating_set is None:
            return f"{constants.SEAHORSE_BENCHMARK}_{names.ALL}"
        return ratings.rating_mixture(dset.rating_set)
    return _VALIDATION[task_or_mixture].removesuffix(names.SCORE_SUFFIX)


def seahorse_task_of(task_or_mixture: str) -> str | None:
    """The older name of `inputs_task_of`."""
    return inputs_task_of(task_or_mixture)


def inputs_meta(task_or_mixture: str) -> dict[str, Any]:
    """What a student of a registered distillation task or mixture records about its inputs
    (`formats.trained_inputs`): `inputs_as`, `questions`, and, for a multi-question input
    of a rating set's questions, `question_prompts`; `{}` for any other name."""
    found = _set_of(task_or_mixture)
    if found is None:
        return {}
    dset, question = found
    questions = list(dset.prompts) if question is None else [question]
    meta: dict[str, Any] = {
        trained_inputs.META_INPUTS_AS: inputs_task_of(task_or_mixture),
        trained_inputs.META_QUESTIONS: questions,
    }
    multi = question is None or task_or_mixture == task_name(dset.name, question, True)
    if multi and dset.rating_set is not None:
        meta[trained_inputs.META_QUESTION_PROMPTS] = {q: dset.prompts[q] for q in questions}
    return meta


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or not name.islower():
        raise errors.UserError(
            f"a distillation set's name must be a lowercase identifier, got {name!r}"
        )
    if name == constants.SEAHORSE_BENCHMARK or names.parse_seahorse_task(f"{name}_q1"):
        raise errors.UserError(f"{name!r} names SEAHORSE's own tasks; pick another name")


def _rating_set_of(questions: tuple[Question, ...], rating_set: str | None) -> str | None:
    """The rating set whose questions these are (None: SEAHORSE's).

    Raises:
      UserError: SEAHORSE's and named questions mixed, a rating set not registered or
        without one of them, or (no `rating_set`) none or several registered sets with them.
    """
    named = [q for q in questions if isinstance(q, str)]
    if not named:
        if rating_set is not None:
            raise errors.UserError(
                f"rating_set={rating_set!r} names the set of named questions, but the "
                f"questions {list(questions)} are SEAHORSE's"
            )
        return None
    if len(named) != len(questions):
        raise errors.UserError(
            f"questions {list(questions)} mix SEAHORSE's numbers and a rating set's names: "
            "register one distillation set for each"
        )
    sets = ratings.rating_questions()
    if rating_set is None:
        having = sorted(s for s, qs in sets.items() if set(named) <= set(qs))
        if len(having) != 1:
            found = (
                f"the sets {', '.join(having)} have" if having else "no registered rating set has"
            )
            raise errors.UserError(
                f"{found} the questions {', '.join(named)}: register the rating set first "
                "(register_rating_tasks) and name it with rating_set="
            )
        return having[0]
    if rating_set not in sets:
        raise errors.UserError(
            f"no rating set named {rating_set!r} is registered (register_rating_tasks first)"
        )
    missing = [q for q in named if q not in sets[rating_set]]
    if missing:
        raise errors.UserError(
            f"the rating set {rating_set!r} has no question {missing[0]!r}; it has "
            f"{', '.join(sets[rating_set])}"
        )
    return rating_set


def _paths(value: Any) -> tuple[str, ...]:
    return tuple(
        os.fspath(p) for p in ([value] if isinstance(value, (str, os.PathLike)) else value)
    )


def _is_joined_dir(paths: tuple[str, ...]) -> bool:
    return len(paths) == 1 and tf.io.gfile.exists(
        os.path.join(paths[0], teacher_scores.REPORT_FILE)
    )


def _fingerprint(settings: tuple) -> dict[str, Any]:
    """The join's settings and its files' sizes and times: a folder joined with the same is
    reused."""
    sources = []
    for path in (*settings[0], *(settings[2] or ())):
        stat = tf.io.gfile.stat(path)
        sources.append([path, stat.length, stat.mtime_nsec])
    return {
        "questions": list(settings[1]),
        "key": list(settings[3]),
        "metric": settings[4],
        "human_labels": settings[5],
        "sources": sources,
    }


def _joined(
    name: str, settings: tuple, joined_dir: str | os.PathLike | None
) -> tuple[str, teacher_scores.TeacherScores]:
    """The folder of the joined pairs and their counts: the one `scores` names, one joined
    before with the same files and settings, or a new join."""
    scores, questions, pairs, key, metric, human_labels = settings
    if _is_joined_dir(scores):
        folder = scores[0]
        read = teacher_scores.read_report(folder, _opener([folder]))
        missing = [q for q in questions if not read.count(q)]
        if missing:
            raise errors.UserError(
                f"{folder} joins the teacher's scores for "
                f"{', '.join(map(arguments.question_key, read.questions))}, not for "
                f"{arguments.question_key(missing[0])}"
            )
        return folder, read
    for path in scores:
        if tf.io.gfile.isdir(path):
            raise errors.UserError(
                f"{path} is a folder without {teacher_scores.REPORT_FILE}: give the teacher's "
                "score files, or a folder join_teacher_scores wrote"
            )
    folder = os.fspath(joined_dir or os.path.join(os.path.dirname(scores[0]), f"{name}_pairs"))
    fingerprint = _fingerprint(settings)
    report = os.path.join(folder, teacher_scores.REPORT_FILE)
    if tf.io.gfile.exists(report):
        with tf.io.gfile.GFile(report) as f:
            if json.load(f).get("fingerprint") == fingerprint:
                logging.info("teacher pairs already joined in %s", folder)
                return folder, teacher_scores.read_report(folder, _opener([folder]))
    remote = "://" in folder
    read = teacher_scores.join_teacher_scores(
        scores,
        questions,
        folder,
        pairs=pairs,
        key=key,
        metric=metric,
        human_labels=human_labels,
        opener=_opener(scores + (pairs or ())),
        output_opener=_gfile_writer if remote else None,
        fingerprint=fingerprint,
    )
    logging.info("joined the teacher pairs into %s", folder)
    return folder, read


def _settings(scores, questions, pairs, key, metric, human_labels) -> tuple:
    """A registration's settings, checked, in the form a repeated registration is compared
    in (and a join is known by)."""
    return (
        _paths(scores),
        arguments.parse_questions(questions, names=True),
        None if pairs is None else _paths(pairs),
        tuple(arguments.string_list(key, "key", "field name")),
        metric,
        bool(human_labels),
    )


def _prompts(wanted: Sequence[Question], rating_set: str | None) -> dict[Question, str]:
    """How the inputs name each question: SEAHORSE's prompts, or the rating set's."""
    if rating_set is None:
        return {q: constants.QUESTION_PROMPTS[q] for q in wanted}
    return {q: ratings.get_rating_set(rating_set).prompts[q] for q in wanted}


def _check_free(planned: Sequence[str]) -> None:
    """Refuses names that tasks or mixtures already registered have taken."""
    taken = set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())
    clash = sorted(set(planned) & taken)
    if clash:
        raise errors.UserError(f"task names already registered: {', '.join(clash)}")


def _add_tasks(
    dset: DistillationSet, wanted: Sequence[Question], vocabulary: seqio.Vocabulary | None
) -> None:
    """The set's tasks, one and several questions in the input each, each validated on the
    teacher question's own score task (SEAHORSE's, or the rating set's)."""
    features = {
        **premise_hypothesis.output_features(vocabulary),
        soft_targets.FEATURE: soft_target_feature(),
    }
    for question in wanted:
        for multi in (False, True):
            task = task_name(dset.name, question, multi)
            premise_hypothesis.add_premise_hypothesis_task(
                task,
                TeacherSource(dset, question),
                features,
                score_mode=False,
                multi_question=multi,
                extra_preprocessors=[add_soft_targets],
            )
            if dset.rating_set is None:
                _VALIDATION[task] = names.seahorse_task(question, score=True, multi_question=multi)
            else:
                _VALIDATION[task] = ratings.rating_task(
                    dset.rating_set, question, score=True, multi_question=multi
                )


def register_distillation_tasks(
    name: str,
    scores: str | os.PathLike | Sequence[str | os.PathLike],
    questions: Sequence[Question] | Question,
    *,
    pairs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    key: Sequence[str] = teacher_scores.DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    vocabulary: seqio.Vocabulary | None = None,
    rating_set: str | None = None,
    joined_dir: str | os.PathLike | None = None,
) -> list[str]:
    """Registers distillation tasks over a teacher's P(yes) (module docstring).

    Example (docs/distillation.md)::

      from seahorse_t5x.tasks import register_distillation_tasks

      register_distillation_tasks("distil", ["teacher_train.jsonl"], questions=[1, 2, 3, 4, 5, 6])
      # -> ["distil_q1", ..., "distil_all_q1", ..., "distil_all"]

    Args:
      name: the set's name, the prefix of its tasks.
      scores: the teacher's score files (`data.teacher_scores.join_teacher_scores`), or the
        folder a join wrote (then `pairs`, `key`, `metric` and `human_labels` were the
        join's).
      questions: the questions to distil: SEAHORSE's (1..6) or a registered rating set's
        (`["polite"]`), not both.
      pairs, key, metric: for score-file rows (`join_teacher_scores`).
      human_labels: the hard target is the human label where a row has one; False: the
        teacher's argmax everywhere (no human label used).
      vocabulary: of inputs and targets (default: the SEAHORSE tasks' deferred one).
      rating_set: the rating set of named questions (default: the one registered set that
        has them).
      joined_dir: where the score files are joined (default: `{name}_pairs` beside the
        first); a folder joined before from the same files and settings is reused.

    Returns:
      The task and mixture names registered. Registering the same name again with the
      same settings returns them again; with other settings it raises.

    Raises:
      UserError: a bad name, files that cannot be read, a question without pairs, questions
        of no registered rating set, or a name taken by other tasks.
    """
    _check_name(name)
    settings = _settings(scores, questions, pairs, key, metric, human_labels)
    existing = _SETS.get(name)
    if existing is not None:
        if existing.settings == settings and vocabulary is None:
            return list(existing.names)
        raise errors.UserError(
            f"distillation set {name!r} is registered with other settings "
            "(remove_distillation_tasks removes it)"
        )
    wanted = settings[1]
    if wanted is None:
        raise errors.UserError("no questions given: name the teacher's questions, e.g. [4]")
    rating_set = _rating_set_of(wanted, rating_set)
    prompts = _prompts(wanted, rating_set)
    planned = [task_name(name, q, multi) for q in wanted for multi in (False, True)]
    mixture = f"{name}_all"
    _check_free(planned + [mixture])
    folder, read = _joined(name, settings, joined_dir)
    logging.info("%s", read.summary())
    if sum(read.dropped.values()):
        logging.warning("%s", read.summary())
    dset = DistillationSet(name, settings, folder, read, rating_set, prompts, ())
    _add_tasks(dset, wanted, vocabulary)
    seqio.MixtureRegistry.add(
        mixture,
        [task_name(name, q, True) for q in wanted],
        default_rate=seqio.mixing_rate_num_examples,
    )
    registered = (*planned, mixture)
    _SETS[name] = dataclasses.replace(dset, names=registered)
    return list(registered)


def remove_distillation_tasks(name: str) -> list[str]:
    """Removes a distillation set's tasks and mixture, so the name can be registered
    again. Returns the names removed (none for an unknown set)."""
    dset = _SETS.pop(name, None)
    if dset is None:
        return []
    for task in dset.names:
        seqio.MixtureRegistry.remove(task)
        seqio.TaskRegistry.remove(task)
        _VALIDATION.pop(task, None)
    return list(dset.names)


def teacher_scores_of(name: str) -> teacher_scores.TeacherScores:
    """The counts and drops of a registered set (its pairs are on disk, in
    `joined_dir_of(name)`).

    Raises:
      UserError: no set of that name is registered.
    """
    return _registered(name).scores


def joined_dir_of(name: str) -> str:
    """The folder of a registered set's joined pairs (`train.jsonl`, `teacher_report.json`).

    Raises:
      UserError: no set of that name is registered.
    """
    return _registered(name).joined_dir


def _registered(name: str) -> DistillationSet:
    if name not in _SETS:
        raise errors.UserError(f"no distillation set named {name!r} is registered")
    return _SETS[name]


def write_t5x_meta(model_dir: str, task_or_mixture: str) -> str:
    """Writes `MODEL_DIR/seahorse_meta.json`: the training task and what its inputs are
    (`inputs_meta`), what `score` reads beside a T5X `checkpoint_N` (process 0 of a run
    writes it). Returns its path."""
    path = os.path.join(model_dir, trained_inputs.T5X_META_FILE)
    meta = {trained_inputs.META_TASK: task_or_mixture, **inputs_meta(task_or_mixture)}
    if _process_index() == 0:
        tf.io.gfile.makedirs(model_dir)
        with tf.io.gfile.GFile(path, "w") as out:
            out.write(json.dumps(meta, indent=1) + "\n")
    return path


def _process_index() -> int:
    import sys

    jax = sys.modules.get("jax")  # (T5X has started JAX; nothing here starts it)
    return 0 if jax is None else jax.process_index()


@gin.configurable(module="seahorse_t5x.tasks.distillation")
def distillation_task(
    name: str = "distil",
    scores: Sequence[str] | str = gin.REQUIRED,
    questions: Sequence[Question] | Question = gin.REQUIRED,
    pairs: Sequence[str] | str | None = None,
    key: Sequence[str] = teacher_scores.DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    rating_set: str | None = None,
    joined_dir: str | None = None,
    model_dir: str | None = None,
) -> str:
    """Registers the set (once) and returns what to train on: `{name}_q{n}` for one
    question, `{name}_all` for several. For T5X gins: `MIXTURE_OR_TASK_NAME =
    @distillation.distillation_task()`; with `model_dir` (`%MODEL_DIR`) it writes
    `MODEL_DIR/seahorse_meta.json` (`write_t5x_meta`), so `score --questions` prompts the
    student as it was trained."""
    registered = register_distillation_tasks(
        name,
        scores,
        questions,
        pairs=pairs,
        key=key,
        metric=metric,
        human_labels=human_labels,
        rating_set=rating_set,
        joined_dir=joined_dir,
    )
    parsed = arguments.parse_questions(questions, names=True)
    chosen = registered[0] if len(parsed) == 1 else registered[-1]
    if model_dir:
        write_t5x_meta(model_dir, chosen)
    return chosen
