"""In-context evaluator (ICE) prompts: settings, demonstration sampling, token fitting.

Plain Python (no TensorFlow): `tasks/ice.py` builds the SeqIO tasks from these pieces, and
the converters read the same prompt format back. See docs/llm_evaluators.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence

import gin
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.formats import vocab

ENV_ANSWER_WORDS = "SEAHORSE_ICE_ANSWER_WORDS"
DEFAULT_ANSWER_WORDS: tuple[str, str] = ("Yes", "No")
UNIFORM = "uniform"
STRATIFIED = "stratified"
SAMPLING_MODES: tuple[str, ...] = (UNIFORM, STRATIFIED)
# The splits an ICE task rates (its demonstrations are drawn from train).
QUERY_SPLITS: tuple[str, ...] = ("validation", "test")

ARTICLE_MARKER = "Article:"
SUMMARY_MARKER = "Summary:"
ANSWER_MARKER = "Answer:"

# The SEAHORSE annotation questions, as the raters saw them.
QUESTION_TEXTS: dict[int, str] = {
    1: "Is the summary comprehensible?",
    2: "Is the summary free of unnecessarily repeated information?",
    3: "Is the summary grammatically correct?",
    4: "Is all the information in the summary fully attributable to the article?",
    5: "Does the summary capture the main idea(s) of the article?",
    6: "Is the summary concise?",
}


@dataclasses.dataclass(frozen=True)
class IceSettings:
    """How demonstrations are drawn and answered.

    Attributes:
      seed: base seed of every item's draw.
      yes_fraction: stratified tasks hold `round_half_up(K * yes_fraction)` Yes
        demonstrations and the rest No.
      answer_words: (yes word, no word), shown in demonstrations and scored.
    """

    seed: int = 0
    yes_fraction: float = 0.5
    answer_words: tuple[str, str] = DEFAULT_ANSWER_WORDS


@gin.configurable(module="seahorse_t5x.formats.ice_format")
def ice_settings(
    seed: int = 0,
    yes_fraction: float = 0.5,
    answer_words: Sequence[str] | str | None = None,
) -> IceSettings:
    """The ICE settings: gin bindings, the answer words also from SEAHORSE_ICE_ANSWER_WORDS.

    Raises:
      UserError: a fraction outside [0, 1] or answer words that are not two different words.
    """
    if not 0.0 <= yes_fraction <= 1.0:
        raise errors.UserError(f"ICE yes_fraction must be in [0, 1], got {yes_fraction}")
    if answer_words is None:
        answer_words = os.environ.get(ENV_ANSWER_WORDS) or ",".join(DEFAULT_ANSWER_WORDS)
    if isinstance(answer_words, str):
        words = vocab.parse_answer_words(answer_words)
    else:
        words = vocab.parse_answer_words(",".join(answer_words))
    return IceSettings(seed=int(seed), yes_fraction=float(yes_fraction), answer_words=words)


def answer_words() -> tuple[str, str]:
    """The ICE tasks' answer words (yes, no), as `ice_settings` gives them: what the ICE
    experiment gins hand to `t5x_models.label_scoring_model`, so T5X scores the words the
    prompts ask for."""
    return ice_settings().answer_words


# ----------------------------------------------------------------------------- sampling


def stratified_counts(shots: int, yes_fraction: float) -> tuple[int, int]:
    """(Yes, No) demonstrations of a stratified draw: K * fraction rounded half up.

    >>> stratified_counts(4, 0.5), stratified_counts(3, 0.5), stratified_counts(4, 0.3)
    ((2, 2), (2, 1), (1, 3))
    """
    yes = min(shots, int(np.floor(shots * yes_fraction + 0.5)))
    return yes, shots - yes


def item_seed(seed: int, *parts: object) -> int:
    """A 64-bit seed from the base seed and the item's identity (stable across runs)."""
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def sample_demonstrations(
    pool: Sequence[Mapping],
    shots: int,
    mode: str,
    rng: np.random.Generator,
    yes_fraction: float = 0.5,
    exclude_gem_id: str | None = None,
) -> list[Mapping]:
    """K demonstrations from `pool` (rows with a 0/1 `label`), without replacement.

    Args:
      pool: candidate rows, each with `label` and `gem_id`.
      shots: K.
      mode: `uniform` (any K rows) or `stratified` (exact `stratified_counts`).
      rng: the item's generator.
      yes_fraction: share of Yes demonstrations in stratified mode.
      exclude_gem_id: rows of this article are never drawn (the rated item's own).

    Returns:
      The drawn rows in prompt order (stratified draws are shuffled, so the answer's
      position says nothing).

    Raises:
      UserError: an unknown mode, or a pool too small for the draw.
    """
    if mode not in SAMPLING_MODES:
        raise errors.UserError(f"ICE sampling must be one of {SAMPLING_MODES}, got {mode!r}")
    candidates = [r for r in pool if r["gem_id"] != exclude_gem_id]
    if mode == UNIFORM:
        if len(candidates) < shots:
            raise errors.UserError(
                f"ICE needs {shots} demonstrations but the training pool holds "
                f"{len(candidates)} usable rows"
            )
        order = rng.choice(len(candidates), size=shots, replace=False)
        return [candidates[i] for i in order]
    wanted = dict(zip((1, 0), stratified_counts(shots, yes_fraction), strict=True))
    drawn: list[Mapping] = []
    for label, count in wanted.items():
        same = [r for r in candidates if int(r["label"]) == label]
        if len(same) < count:
            raise errors.UserError(
                f"stratified ICE needs {count} demonstrations rated "
                f"{'Yes' if label else 'No'} but the training pool holds {len(same)}"
            )
        drawn += [same[i] for i in rng.choice(len(same), size=count, replace=False)]
    return [drawn[i] for i in rng.permutation(len(drawn))]


# ----------------------------------------------------------------------------- fitting


def _water_fill(lengths: Sequence[int], total: int) -> list[int]:
    """Kept lengths: the longest are cut first, down to a common cap, within `total`."""
    if sum(lengths) <= total:
        return list(lengths)
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    kept = [0] * len(lengths)
    left = total
    for rank, i in enumerate(order):
        share = left // (len(order) - rank)
        kept[i] = min(lengths[i], share)
        left -= kept[i]
    return kept


def fit_ice_tokens(
    instruction: Sequence[int],
    article_marker: Sequence[int],
    demo_articles: Sequence[Sequence[int]],
    demo_rests: Sequence[Sequence[int]],
    article: Sequence[int],
    rest: Sequence[int],
    budget: int,
) -> tuple[list[int], dict[str, int]]:
    """Joins the prompt's token parts within `budget` tokens (EOS not included).

    Order of cuts: demonstrations' articles (longest first), the rated article, whole
    demonstrations (last first); the rated `rest` (summary and answer marker) is cut only
    when it alone exceeds the budget, and then the instruction is dropped first.

    Returns:
      The tokens and counts: `demo_article_tokens_dropped`, `article_tokens_dropped`,
      `demonstrations_dropped`, `summary_truncated` (0/1).
    """
    marker = list(article_marker)
    for shots in range(len(demo_rests), -1, -1):
        fixed = len(instruction) + len(marker) + len(rest)
        fixed += sum(len(marker) + len(r) for r in demo_rests[:shots])
        room = budget - fixed
        if room < 0:
            continue
        kept_article = min(len(article), room)
        demo_lengths = [len(a) for a in demo_articles[:shots]]
        kept_demo = _water_fill(demo_lengths, room - kept_article)
        tokens = list(instruction)
        for a, r, keep in zip(demo_articles[:shots], demo_rests[:shots], kept_demo, strict=True):
            tokens += marker + list(a[:keep]) + list(r)
        tokens += marker + list(article[:kept_article]) + list(rest)
        counts = {
            # Articles of dropped demonstrations count too.
            "demo_article_tokens_dropped": sum(len(a) for a in demo_articles) - sum(kept_demo),
            "article_tokens_dropped": len(article) - kept_article,
            "demonstrations_dropped": len(demo_rests) - shots,
            "summary_truncated": 0,
        }
        return tokens, counts
    # Not even instruction + rated summary fit: keep what of the summary fits, then the
    # beginning of the instruction.
    tail = (marker + list(rest))[:budget]
    tokens = list(instruction[: budget - len(tail)]) + tail
    counts = {
        "demo_article_tokens_dropped": sum(len(a) for a in demo_articles),
        "article_tokens_dropped": len(article),
        "demonstrations_dropped": len(demo_rests),
        "summary_truncated": int(len(marker) + len(rest) > budget),
    }
    return tokens, counts


# ----------------------------------------------------------------------------- text


def instruction_text(question: int, answer_words: Sequence[str]) -> str:
    """`Is the summary concise? Answer Yes or No.` for question 6 and Yes/No."""
    return f"{QUESTION_TEXTS[question]} Answer {answer_words[0]} or {answer_words[1]}."


def demonstration_rest(summary: str, answer: str | None) -> str:
    """`Summary: ... Answer: Yes` (the rated pair: `Summary: ... Answer:`)."""
    tail = ANSWER_MARKER if answer is None else f"{ANSWER_MARKER} {answer}"
    return f"{SUMMARY_MARKER} {summary} {tail}"
