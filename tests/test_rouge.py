"""ROUGE-L on tokens: the bit-parallel LCS against a plain dynamic program and hand values."""

import random

import pytest

from seahorse_t5x.scoring import rouge


def _lcs_by_table(a, b):
    # The textbook O(len(a) * len(b)) table, as rouge-score computes it.
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, start=1):
        for j, y in enumerate(b, start=1):
            table[i][j] = (
                table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
            )
    return table[-1][-1]


def test_hand_computed_value():
    # reference a b c d, candidate a c e: LCS "a c" = 2, P = 2/3, R = 2/4, F = 2PR/(P+R) = 4/7.
    result = rouge.rouge_l("a b c d".split(), "a c e".split())
    assert result.lcs == 2
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == pytest.approx(1 / 2)
    assert result.fmeasure == pytest.approx(4 / 7)


def test_rouge_score_semantics_on_whitespace_tokens():
    # rouge-score's example pair: "the cat was found under the bed" vs "the cat was under the bed":
    # LCS 6, P 6/6, R 6/7, F 12/13.
    article = rouge.whitespace_tokenizer("The cat was found under the bed")
    summary = rouge.whitespace_tokenizer("the cat was under the bed")
    assert rouge.rouge_l(article, summary).fmeasure == pytest.approx(12 / 13)


def test_bit_parallel_lcs_equals_the_table_on_random_sequences():
    rng = random.Random(0)
    for _ in range(500):
        a = [rng.randrange(6) for _ in range(rng.randrange(0, 40))]
        b = [rng.randrange(6) for _ in range(rng.randrange(0, 40))]
        assert rouge.lcs_length(a, b) == _lcs_by_table(a, b)


def test_long_reference_beyond_machine_word():
    reference = list(range(300))
    candidate = [5, 70, 1000, 130, 299, 2]
    assert rouge.lcs_length(reference, candidate) == 4


def test_empty_sides_score_zero():
    assert rouge.rouge_l([], [1, 2]).fmeasure == 0.0
    assert rouge.rouge_l([1, 2], []).fmeasure == 0.0
    assert rouge.rouge_l([1, 2], [3]).fmeasure == 0.0


def test_sentencepiece_tokens(tmp_path):
    import sentencepiece

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(
            ["the council approved a new park in the city"] * 20 + ["rain fell on monday"] * 20
        )
    )
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(tmp_path / "sp"),
        vocab_size=40,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    tokenize = rouge.sentencepiece_tokenizer(str(tmp_path / "sp.model"))
    article = "the council approved a new park"
    ids_article, ids_summary = tokenize(article), tokenize("a new park")
    assert all(isinstance(i, int) for i in ids_article)
    expected = rouge.rouge_l(ids_article, ids_summary).fmeasure
    assert rouge.rouge_l_fmeasure(article, "a new park", tokenize) == expected
    # The summary is a contiguous piece of the article: precision is 1.
    assert rouge.rouge_l(ids_article, ids_summary).precision == 1.0
