"""The one way `score`, `evaluate`, `score_file` and the demo build a `Scorer` from a
checkpoint and `ScoringSettings`, and `explain` a `Generator`."""

from __future__ import annotations

import os
from typing import Any

from seahorse_t5x.inference import inputs
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.inference import settings as settings_lib


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
    if mesh is None:
        mesh = settings_lib.create_mesh(settings.mesh)
    scorer = scorer_lib.Scorer(
        checkpoint, mesh=mesh, question=question, **settings.scorer_arguments()
    )
    inputs.check_room_for_summary(scorer.vocab, scorer.input_length, "input_length", question)
    return scorer


def load_generator(checkpoint: str | os.PathLike | tuple[Any, Any], **options: Any) -> Any:
    """A `generation.Generator` for `checkpoint` (`options`: its arguments).

    Raises:
      UserError: for bad options or a bad checkpoint.
    """
    from seahorse_t5x.inference import generation

    return generation.Generator(checkpoint, **options)
