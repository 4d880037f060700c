"""`questions`: which SEAHORSE questions a user wants scores for, whatever the checkpoint.

The same request means, by what the checkpoint is:

- a family (`google/seahorse-large`, a folder of `q1`..`q6` checkpoints): its members, one
  column each (default: all six);
- a multi-question model (its recorded training task, meta `mixture_or_task_name`, names
  the question in its inputs: `seahorse_all`, `seahorse_all_q4`): the questions its inputs
  name, one column each. Such a model needs the request: scoring it without naming a
  question would give scores it never learnt to give, so that is refused;
- a one-question model: a check against its own question (the `-qN` its name ends in, or
  the question of its training task), and the question its score-file rows carry;
- a model of a rating set's questions (meta `question_prompts`, recorded for a model whose
  inputs name them: trained on `tone_all`, or distilled from a teacher of them): the
  questions by name (`polite`), its inputs naming each by the prompt it was trained with.

The meta is a runner checkpoint's, or a T5X run's `MODEL_DIR/seahorse_meta.json`
(`formats.trained_inputs`) beside its `checkpoint_N`.

A request the checkpoint cannot answer is refused in one line: several questions for a
one-question model, a question that is not the model's own, none for a multi-question model.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pathlib
import re
from collections.abc import Mapping
from typing import Any

from seahorse_t5x import errors, fileio
from seahorse_t5x.arguments import Question
from seahorse_t5x.data import ratings
from seahorse_t5x.formats import task_names, trained_inputs

log = logging.getLogger(__name__)

# The meta key of the runner's checkpoints that names the training task or mixture, and
# the one that names the SEAHORSE task whose inputs it had, when its own name does not say
# (a distillation task: `distil_all` -> `seahorse_all`).
META_TASK = trained_inputs.META_TASK
META_INPUTS_AS = trained_inputs.META_INPUTS_AS
# A rating set's multi-question names (`chat_all`, `chat_all_polite[_score]`): what a model
# trained on them saw is an input that names its question.
_RATING_MULTI = re.compile(r"(?P<set>[a-z][a-z0-9_]*?)_all(?:_[a-z][a-z0-9_]*)?")


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of scores: which checkpoint gives it and what its inputs name.

    Attributes:
      question: the question the scores answer: SEAHORSE's number, a rating set's name
        (None: not known, one model).
      checkpoint: the checkpoint path or Hub name (a family's member).
      prompt: the question the inputs name: SEAHORSE's number, or the prompt's text (None:
        the inputs name no question).
    """

    question: Question | None
    checkpoint: str
    prompt: int | str | None = None


def trained_task(meta: Mapping[str, Any]) -> str | None:
    """The task or mixture a runner checkpoint was trained on, as the SEAHORSE task whose
    inputs it had where recorded (a distillation task's); None: not recorded."""
    task = meta.get(META_INPUTS_AS) or meta.get(META_TASK)
    return task if isinstance(task, str) and task else None


def inputs_name_the_question(task: str | None) -> bool | None:
    """Whether a training task's inputs name the question: SEAHORSE's multi-question names
    (`seahorse_all`, `seahorse_all_q4`) and a rating set's (`chat_all`, `chat_all_polite`)
    say True, SEAHORSE's one-question tasks False; None for other names.

    >>> [inputs_name_the_question(n) for n in ("seahorse_all", "seahorse_q4", "chat_all", "x")]
    [True, False, True, None]
    """
    if task is None:
        return None
    named = task_names.names_the_question(task)
    if named is not None:
        return named
    base = task.partition(".")[0]
    match = _RATING_MULTI.fullmatch(base)
    if match and match["set"] not in ratings.reserved_names():
        return True
    return None


def warn_on_question_mismatch(
    meta: Mapping[str, Any], checkpoint: Any, names_question: bool
) -> None:
    """Warns when inputs name the question and the model was trained on inputs that did
    not (or the other way round): its scores would not be the ones it learnt to give."""
    trained_on = trained_task(meta)
    trained = inputs_name_the_question(trained_on)
    if trained is None or trained == names_question:
        return
    if trained:
        log.warning(
            "%s was trained on %s, whose inputs name the question; these do not (give "
            "`questions` to score the questions it was trained on, or use its _all_ score "
            "tasks, e.g. seahorse_all_qN_score)",
            checkpoint,
            trained_on,
        )
    else:
        log.warning(
            "%s was trained on %s, whose inputs do not name the question; these do",
            checkpoint,
            trained_on,
        )


def family_columns(
    checkpoint: str | os.PathLike, questions: tuple[int, ...] | None
) -> list[Column] | None:
    """A family's members for `questions` (default: all six); None for one model. Nothing is
    fetched.

    Raises:
      UserError: a local family lacks a wanted question, or holds one twice.
    """
    from seahorse_t5x.model import checkpoints

    members = checkpoints.family_members(checkpoint, questions)
    if members is None:
        return None
    return [Column(q, str(member)) for q, member in members.items()]


def checkpoint_meta(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """How a local checkpoint was trained (`checkpoints.load_meta`); `{}` for a Hub name (a
    Hub model is an HF checkpoint: no meta) or a checkpoint the loader will report on."""
    from seahorse_t5x.model import checkpoints

    if not pathlib.Path(checkpoint).exists():
        return {}
    try:
        meta = checkpoints.load_meta(checkpoint)
        kind, directory = checkpoints.detect_format(checkpoint)
    except errors.UserError:  # reported by the loader, once the output path is checked
        return {}
    return t5x_meta(directory) if kind == "t5x" and not meta else meta


def t5x_meta(checkpoint_dir: str | os.PathLike) -> dict[str, Any]:
    """A T5X run's `seahorse_meta.json` in its MODEL_DIR (beside `checkpoint_N`; written by
    the distillation gins), `{}` when there is none.

    Raises:
      UserError: the file is not a JSON object.
    """
    for folder in (pathlib.Path(checkpoint_dir), pathlib.Path(checkpoint_dir).parent):
        path = folder / trained_inputs.T5X_META_FILE
        if path.is_file():
            meta = fileio.read_json(path, "a JSON object (seahorse_meta.json)")
            if not isinstance(meta, dict):
                raise errors.UserError(f"{path}: expected a JSON object")
            return meta
    return {}


def model_columns(
    checkpoint: str | os.PathLike,
    meta: Mapping[str, Any],
    questions: tuple[Question, ...] | None,
) -> list[Column]:
    """The columns one model gives for `questions` (see the module docstring).

    Raises:
      UserError: a request this model cannot answer.
    """
    task = trained_task(meta)
    prompts = meta.get(trained_inputs.META_QUESTION_PROMPTS)
    if prompts:
        return _prompted_columns(str(checkpoint), task, prompts, questions)
    if questions is not None and any(isinstance(q, str) for q in questions):
        return _named_columns(str(checkpoint), meta, questions)
    if task is not None and task_names.names_the_question(task):
        return _multi_question_columns(str(checkpoint), task, questions)
    from seahorse_t5x.model import checkpoints

    own = checkpoints.question_of(checkpoint)
    if own is None and task is not None and task_names.names_the_question(task) is False:
        own = task_names.question_of_task(task)
    if questions is None:
        return [Column(own, str(checkpoint))]
    if len(questions) > 1:
        raise errors.UserError(
            f"questions lists {len(questions)} questions, but {checkpoint} is one model "
            "answering one question: give a family (google/seahorse-large, or a folder of "
            "q1..q6 checkpoints), or a model trained on seahorse_all"
        )
    if own is not None and own != questions[0]:
        raise errors.UserError(
            f"{checkpoint} is the metric of question {own}, not of question {questions[0]}"
        )
    return [Column(questions[0], str(checkpoint))]


def _prompted_columns(
    checkpoint: str,
    task: str | None,
    prompts: Mapping[str, str],
    questions: tuple[Question, ...] | None,
) -> list[Column]:
    """A multi-question model of a rating set's questions: one column per question asked,
    its inputs naming it by the prompt the model was trained with.

    Raises:
      UserError: no question asked, or one the model was not trained on.
    """
    known = ", ".join(prompts)
    if questions is None:
        raise errors.UserError(
            f"{checkpoint} was trained on {task}, whose inputs name the question: give "
            f"`questions`, the questions to score (it answers {known})"
        )
    other = [q for q in questions if q not in prompts]
    if other:
        raise errors.UserError(
            f"{checkpoint} was trained on {task}: it answers {known}, not question {other[0]}"
        )
    return [Column(q, checkpoint, prompt=prompts[q]) for q in questions]


def _named_columns(
    checkpoint: str, meta: Mapping[str, Any], questions: tuple[Question, ...]
) -> list[Column]:
    """A one-question model asked for a rating set's question by name: a check against the
    question it was trained on, where its meta says.

    Raises:
      UserError: several questions, or not the model's own.
    """
    if len(questions) > 1:
        raise errors.UserError(
            f"questions lists {len(questions)} questions, but {checkpoint} is one model "
            "answering one question: give a model whose inputs name the question (trained "
            "on a rating set's _all mixture)"
        )
    own = meta.get(trained_inputs.META_QUESTIONS)
    if isinstance(own, list) and len(own) == 1 and own[0] != questions[0]:
        raise errors.UserError(
            f"{checkpoint} is the metric of question {own[0]}, not of question {questions[0]}"
        )
    return [Column(questions[0], checkpoint)]


def _multi_question_columns(
    checkpoint: str, task: str, questions: tuple[int, ...] | None
) -> list[Column]:
    own = task_names.question_of_task(task)  # seahorse_all_q4: question 4 only
    if questions is None:
        if own is None:
            raise errors.UserError(
                f"{checkpoint} was trained on {task}, whose inputs name the question: give "
                "`questions` (1..6), the questions to score"
            )
        questions = (own,)
    other = [q for q in questions if own is not None and q != own]
    if other:
        raise errors.UserError(
            f"{checkpoint} was trained on {task}: it answers question {own}, not question "
            f"{other[0]}"
        )
    return [Column(q, checkpoint, prompt=q) for q in questions]


def plan_columns(
    checkpoint: str | os.PathLike, questions: tuple[Question, ...] | None
) -> tuple[list[Column], bool]:
    """(the columns `questions` asks of `checkpoint`, whether it is a family); only files are
    read, nothing is fetched.

    Raises:
      UserError: a request the checkpoint cannot answer.
    """
    family = family_columns(checkpoint, questions)
    if family is not None:
        return family, True
    return model_columns(checkpoint, checkpoint_meta(checkpoint), questions), False
