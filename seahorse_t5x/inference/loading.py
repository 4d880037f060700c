"""The one way a `Scorer` and an `Engine` are built: `build_scorer` (every `Scorer` the
package makes: `load_scorer`'s for `score`, `evaluate`, `score_file` and the demo,
`Scorer.from_pretrained`'s and `score_questions`'), `build_engine` (the `Scorer`'s own, the
trainer's validation, `plan --scoring`), and `explain`'s `Generator`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from seahorse_t5x.inference import inputs
from seahorse_t5x.inference import settings as settings_lib

# Defined beside the `Engine` (the `Scorer` builds its engine with it); named here too.
from seahorse_t5x.inference.engine import build_engine  # noqa: F401

if TYPE_CHECKING:
    from seahorse_t5x.inference import scorer as scorer_lib


def build_scorer(
    checkpoint: str | os.PathLike | tuple[Any, Any], **arguments: Any
) -> scorer_lib.Scorer:
    """A `Scorer` for `checkpoint` with `arguments` (the `Scorer`'s: `vocab`, `input_length`,
    `batch_size`, `dtype`, `param_dtype`, `mesh`, `question`, ...).

    Raises:
      UserError: for a bad checkpoint or argument.
    """
    from seahorse_t5x.inference import scorer as scorer_lib

    return scorer_lib.Scorer(checkpoint, **arguments)


def load_scorer(
    checkpoint: str | os.PathLike | tuple[Any, Any],
    settings: settings_lib.ScoringSettings | None = None,
    *,
    question: int | None = None,
    mesh: Any = None,
) -> scorer_lib.Scorer:
    """A `Scorer` for `checkpoint` as `settings` say, its input length checked to leave room
    for a summary.

    Args:
      checkpoint: a path, a Hub name, or a loaded `(MT5Config, params)` pair.
      settings: the scoring settings (default: `ScoringSettings()`); checked here.
      question: the question the inputs name (a multi-question model's; `inference.questions`).
      mesh: a device mesh to use instead of the one `settings.mesh` describes.

    Raises:
      UserError: for settings that cannot work with this checkpoint, or a bad checkpoint.
    """
    settings = (settings or settings_lib.ScoringSettings()).checked()
    arguments = settings.scorer_arguments()
    if mesh is not None:
        arguments["mesh"] = mesh
    scorer = build_scorer(checkpoint, question=question, **arguments)
    inputs.check_room_for_summary(scorer.vocab, scorer.input_length, "input_length", question)
    return scorer


def load_generator(checkpoint: str | os.PathLike | tuple[Any, Any], **options: Any) -> Any:
    """A `generation.Generator` for `checkpoint` (`options`: its arguments).

    Raises:
      UserError: for bad options or a bad checkpoint.
    """
    from seahorse_t5x.inference import generation

    return generation.Generator(checkpoint, **options)
