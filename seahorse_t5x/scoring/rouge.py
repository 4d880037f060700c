"""ROUGE-L between an article and its summary, the paper's model-free baseline.

The paper scores each summary by ROUGE-L F-measure against its own article, on
SentencePiece tokens (Table 5-7 "ROUGE-L"). The F-measure follows `rouge-score`'s
definition: precision = LCS / summary length, recall = LCS / article length,
F = 2PR / (P + R) (0 when the LCS is empty).

The longest common subsequence uses the bit-parallel recurrence of Hyyrö (2004): the article
is a bit vector per token id, and each summary token updates one Python integer, so a
2,000-token article costs a few big-integer operations per summary token instead of a
2,000-cell dynamic-programming row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

Token = int | str


@dataclasses.dataclass(frozen=True)
class RougeL:
    """ROUGE-L of a candidate against a reference: LCS length, precision, recall, F."""

    lcs: int
    precision: float
    recall: float
    fmeasure: float


def lcs_length(reference: Sequence[Token], candidate: Sequence[Token]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    if not reference or not candidate:
        return 0
    # Bit i of match[t] is set when reference[i] == t.
    match: dict[Token, int] = {}
    for i, token in enumerate(reference):
        match[token] = match.get(token, 0) | (1 << i)
    full = (1 << len(reference)) - 1
    v = full  # zero bits mark the reference positions the LCS has used so far
    for token in candidate:
        u = v & match.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(reference) - v.bit_count()


def rouge_l(reference: Sequence[Token], candidate: Sequence[Token]) -> RougeL:
    """ROUGE-L of `candidate` (the summary) against `reference` (the article).

    Example: reference `a b c d`, candidate `a c e`: LCS 2, P 2/3, R 2/4, F 4/7.
    """
    lcs = lcs_length(reference, candidate)
    if lcs == 0:
        return RougeL(0, 0.0, 0.0, 0.0)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    return RougeL(lcs, precision, recall, 2 * precision * recall / (precision + recall))


def rouge_l_fmeasure(
    article: str, summary: str, tokenize: Callable[[str], Sequence[Token]]
) -> float:
    """ROUGE-L F-measure of `summary` against `article` on the tokens of `tokenize`."""
    return rouge_l(tokenize(article), tokenize(summary)).fmeasure


def sentencepiece_tokenizer(model_path: str) -> Callable[[str], list[int]]:
    """Token ids of a SentencePiece model, as the paper's ROUGE-L baseline tokenizes.

    The ids equal those of `seqio.SentencePieceVocabulary(model_path).encode` for plain text
    (sentinel extra ids never occur in articles), without importing TensorFlow.
    """
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=model_path)
    return lambda text: processor.encode(text)


def whitespace_tokenizer(text: str) -> list[str]:
    """Lower-cased whitespace tokens: a model-free tokenizer for checks and quick runs."""
    return text.lower().split()
