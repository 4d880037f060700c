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

The hard target is the human label where the row has one (and `human_labels`), else the
teacher's argmax (P(yes) >= 0.5). Validation and test go through SEAHORSE's score tasks
(`validation_task`: `seahorse_q4_score` for `distil_q4`, `seahorse_all_q4_score` for
`distil_all_q4`), so the student is measured against human labels like any metric.

Both trainers train a batch with soft targets on the distillation loss
(`seahorse_t5x.model.distillation`): the local runner's `train` and T5X with
`gin/runs/finetune.gin` (`LabelScoringModel`). In a T5X gin the registration is a
configurable that returns the mixture's name (`experiments/distill_*.gin`):

    MIXTURE_OR_TASK_NAME = @distillation.distillation_task()
    distillation.distillation_task.scores = %TEACHER_SCORES
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator, Sequence

import gin
import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.data import teacher_scores
from seahorse_t5x.formats import soft_targets
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
    """A registered set: its settings, the teacher's pairs and the names it registered."""

    name: str
    settings: tuple
    scores: teacher_scores.TeacherScores
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


def _examples(scores: teacher_scores.TeacherScores, question: int) -> Iterator[dict]:
    prompt = constants.QUESTION_PROMPTS[question]
    for example in scores.examples:
        p = example.p_yes.get(question)
        if p is None:
            continue
        label = example.labels.get(question, int(p >= 0.5))
        yield {
            "premise": example.article,
            "hypothesis": example.summary,
            "label": label,
            "question": question,
            "question_prompt": prompt,
            **example.metadata,
            _CODE: soft_targets.encode(p),
        }


def _dataset(
    split: str, shuffle_files: bool, seed: int | None = None, *, scores, question: int
) -> tf.data.Dataset:
    del shuffle_files, seed  # the pairs are in memory; SeqIO shuffles examples
    if split != SPLIT:
        raise errors.UserError(
            f"distillation tasks have a {SPLIT!r} split only (validation and test go through "
            f"SEAHORSE's score tasks), got {split!r}"
        )
    return tf.data.Dataset.from_generator(
        functools.partial(_examples, scores, question), output_signature=_OUTPUT_SIGNATURE
    )


class TeacherSource(seqio.FunctionDataSource):
    """The pairs with a teacher P(yes) for one question; `train` split only."""

    def __init__(self, scores: teacher_scores.TeacherScores, question: int) -> None:
        self.scores = scores
        self.question = question
        super().__init__(
            dataset_fn=functools.partial(_dataset, scores=scores, question=question),
            splits=(SPLIT,),
        )

    def num_input_examples(self, split: str) -> int:
        return self.scores.count(self.question) if split == SPLIT else 0


def task_name(name: str, question: int, multi_question: bool = False) -> str:
    """`{name}_q4`, or `{name}_all_q4` for the multi-question input."""
    return f"{name}_{'all_' if multi_question else ''}q{question}"


def validation_task(task_or_mixture: str) -> str | None:
    """The SEAHORSE score task that measures a distillation task's student, or None for a
    name that is not a registered distillation task."""
    return _VALIDATION.get(task_or_mixture)


def seahorse_task_of(task_or_mixture: str) -> str | None:
    """The SEAHORSE task whose inputs a registered distillation task or mixture has
    (`distil_all` -> `seahorse_all`, `distil_all_q4` -> `seahorse_all_q4`, `distil_q4` ->
    `seahorse_q4`); None for any other name."""
    for dset in _SETS.values():
        if task_or_mixture == f"{dset.name}_all":
            return "seahorse_all"
    validation = _VALIDATION.get(task_or_mixture)
    return None if validation is None else validation.removesuffix(names.SCORE_SUFFIX)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or not name.islower():
        raise errors.UserError(
            f"a distillation set's name must be a lowercase identifier, got {name!r}"
        )
    if name == constants.SEAHORSE_BENCHMARK or names.parse_seahorse_task(f"{name}_q1"):
        raise errors.UserError(f"{name!r} names SEAHORSE's own tasks; pick another name")


def register_distillation_tasks(
    name: str,
    scores: str | os.PathLike | Sequence[str | os.PathLike],
    questions: Sequence[int | str] | int | str,
    *,
    pairs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    key: Sequence[str] = teacher_scores.DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    vocabulary: seqio.Vocabulary | None = None,
) -> list[str]:
    """Registers distillation tasks over a teacher's P(yes) (module docstring).

    Example (docs/distillation.md)::

      from seahorse_t5x.tasks import register_distillation_tasks

      register_distillation_tasks("distil", ["teacher_train.jsonl"], questions=[1, 2, 3, 4, 5, 6])
      # -> ["distil_q1", ..., "distil_all_q1", ..., "distil_all"]

    Args:
      name: the set's name, the prefix of its tasks.
      scores: the teacher's score files (`data.teacher_scores.read_teacher_scores`).
      questions: the SEAHORSE questions to distil (1..6).
      pairs, key, metric: for score-file rows (`read_teacher_scores`).
      human_labels: the hard target is the human label where a row has one; False: the
        teacher's argmax everywhere (no human label used).
      vocabulary: of inputs and targets (default: the SEAHORSE tasks' deferred one).

    Returns:
      The task and mixture names registered. Registering the same name again with the
      same settings returns them again; with other settings it raises.

    Raises:
      UserError: a bad name, files that cannot be read, a question without pairs, or a
        name taken by other tasks.
    """
    _check_name(name)
    settings = (
        tuple(
            os.fspath(p) for p in ([scores] if isinstance(scores, (str, os.PathLike)) else scores)
        ),
        arguments.parse_questions(questions),
        None
        if pairs is None
        else tuple(
            os.fspath(p) for p in ([pairs] if isinstance(pairs, (str, os.PathLike)) else pairs)
        ),
        tuple(arguments.string_list(key, "key", "field name")),
        metric,
        bool(human_labels),
    )
    existing = _SETS.get(name)
    if existing is not None:
        if existing.settings == settings and vocabulary is None:
            return list(existing.names)
        raise errors.UserError(
            f"distillation set {name!r} is registered with other settings "
            "(remove_distillation_tasks removes it)"
        )
    read = teacher_scores.read_teacher_scores(
        settings[0],
        settings[1],
        pairs=settings[2],
        key=settings[3],
        metric=metric,
        human_labels=human_labels,
        opener=_opener(settings[0] + (settings[2] or ())),
    )
    logging.info("%s", read.summary())
    if sum(read.dropped.values()):
        logging.warning("%s", read.summary())
    planned = [task_name(name, q, multi) for q in read.questions for multi in (False, True)]
    mixture = f"{name}_all"
    taken = set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())
    clash = sorted(set(planned + [mixture]) & taken)
    if clash:
        raise errors.UserError(f"task names already registered: {', '.join(clash)}")
    features = {
        **premise_hypothesis.output_features(vocabulary),
        soft_targets.FEATURE: soft_target_feature(),
    }
    for question in read.questions:
        for multi in (False, True):
            task = task_name(name, question, multi)
            premise_hypothesis.add_premise_hypothesis_task(
                task,
                TeacherSource(read, question),
                features,
                score_mode=False,
                multi_question=multi,
                extra_preprocessors=[add_soft_targets],
            )
            _VALIDATION[task] = names.seahorse_task(question, score=True, multi_question=multi)
    seqio.MixtureRegistry.add(
        mixture,
        [task_name(name, q, True) for q in read.questions],
        default_rate=seqio.mixing_rate_num_examples,
    )
    registered = (*planned, mixture)
    _SETS[name] = DistillationSet(name, settings, read, registered)
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
    """The pairs and drop counts of a registered set.

    Raises:
      UserError: no set of that name is registered.
    """
    if name not in _SETS:
        raise errors.UserError(f"no distillation set named {name!r} is registered")
    return _SETS[name].scores


@gin.configurable(module="seahorse_t5x.tasks.distillation")
def distillation_task(
    name: str = "distil",
    scores: Sequence[str] | str = gin.REQUIRED,
    questions: Sequence[int | str] | int | str = gin.REQUIRED,
    pairs: Sequence[str] | str | None = None,
    key: Sequence[str] = teacher_scores.DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
) -> str:
    """Registers the set (once) and returns what to train on: `{name}_q{n}` for one
    question, `{name}_all` for several. For T5X gins: `MIXTURE_OR_TASK_NAME =
    @distillation.distillation_task()`."""
    registered = register_distillation_tasks(
        name, scores, questions, pairs=pairs, key=key, metric=metric, human_labels=human_labels
    )
    parsed = arguments.parse_questions(questions)
    return registered[0] if len(parsed) == 1 else registered[-1]
