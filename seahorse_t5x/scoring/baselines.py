"""Model-free baselines of the paper: majority class and ROUGE-L (article vs summary).

Both write the per-example score rows of `data/scorefiles.py`, so `report` ranks them
beside the learnt metrics.

- `majority`: every item gets the same score, the training set's Yes rate for the question.
  A constant score ranks nothing: ROC-AUC is 0.5 by construction (every positive/negative
  pair is a tie, counted one half, as `evaluation.stats` and sklearn count it) and Pearson
  rho is undefined (zero variance). `majority_metrics` (`evaluation.score_statistics`'s)
  states both, with the accuracy of always answering the larger class.
- `rouge_l`: ROUGE-L F-measure of the summary against its own article on SentencePiece
  tokens (`scoring/rouge.py`); the same score for all six questions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from seahorse_t5x import constants, errors
from seahorse_t5x.data import scorefiles
from seahorse_t5x.evaluation import score_statistics
from seahorse_t5x.scoring import rouge

MAJORITY = "majority"
ROUGE_L = "rouge_l"
BASELINES: tuple[str, ...] = (MAJORITY, ROUGE_L)
# The majority baseline's agreement has one home, beside the other agreement statistics.
majority_metrics = score_statistics.majority_metrics


def yes_rates(train_rows: Iterable[dict]) -> dict[int, float]:
    """Share of Yes among the rated training items, per question (the majority score).

    Raises:
      UserError: a question has no rated item in the training rows.
    """
    yes = dict.fromkeys(constants.QUESTIONS, 0)
    rated = dict.fromkeys(constants.QUESTIONS, 0)
    for row in train_rows:
        for q in constants.QUESTIONS:
            label = row.get(f"q{q}")
            if label is not None:
                rated[q] += 1
                yes[q] += int(label == 1)
    empty = [q for q in constants.QUESTIONS if rated[q] == 0]
    if empty:
        raise errors.UserError(f"no rated training items for questions {empty}")
    return {q: yes[q] / rated[q] for q in constants.QUESTIONS}


def seahorse_score_rows(
    rows: Sequence[dict],
    metric: str,
    scores: Sequence[float],
    questions: Sequence[int] = constants.QUESTIONS,
) -> list[dict]:
    """Score-file rows for SEAHORSE items: one per (item, question) the item has a label for.

    Args:
      rows: joined split rows.
      metric: the baseline's name (`majority`, `rouge_l`).
      scores: one score per row, used for every question in `questions`.
    """
    out: list[dict] = []
    for q in questions:
        for row, score in zip(rows, scores, strict=True):
            label = row.get(f"q{q}")
            if label is None:
                continue
            out.append(
                scorefiles.score_row(
                    metric=metric,
                    benchmark=constants.SEAHORSE_BENCHMARK,
                    question=q,
                    label=int(label),
                    score=float(score),
                    slices=row,
                )
            )
    return out


def majority_score_rows(rows: Sequence[dict], rates: dict[int, float]) -> list[dict]:
    """The majority baseline on SEAHORSE rows: score = training Yes rate of the question."""
    out: list[dict] = []
    for q in constants.QUESTIONS:
        out += seahorse_score_rows(rows, MAJORITY, [rates[q]] * len(rows), questions=[q])
    return out


def rouge_l_scores(
    pairs: Iterable[tuple[str, str]], tokenize: Callable[[str], Sequence]
) -> list[float]:
    """ROUGE-L F-measure of each (article, summary) pair on `tokenize`'s tokens."""
    return [rouge.rouge_l_fmeasure(article, summary, tokenize) for article, summary in pairs]


def benchmark_score_rows(
    examples: Sequence[dict],
    metric: str,
    benchmark: str,
    scores: Sequence[float],
    row_fields: Sequence[str] = (),
) -> list[dict]:
    """Score-file rows for benchmark examples from `data.benchmarks` readers.

    `question` is the example's own (`quality`, `4`, `task_quality`, ...); extra fields such as
    mFACE's `label_binary` are kept, and the benchmark's `row_fields` (`split`, `origin`).
    """
    out: list[dict] = []
    for example, score in zip(examples, scores, strict=True):
        extra = {"label_binary": example["label_binary"]} if "label_binary" in example else {}
        extra.update({k: example[k] for k in row_fields if example.get(k) not in (None, "")})
        out.append(
            scorefiles.score_row(
                metric=metric,
                benchmark=benchmark,
                question=example["question"],
                label=example["label"],
                score=float(score),
                slices=example,
                extra=extra,
            )
        )
    return out
