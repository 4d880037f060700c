"""Answer words -> the token ids scored at the first decoder step, looked up in the vocabulary."""

from __future__ import annotations

import pytest
import sentencepiece as spm
import seqio

from seahorse_t5x import errors
from seahorse_t5x.formats import vocab

CORPUS_WORDS = "Yes No Ja Nein the summary article is good bad 1 0 maybe".split()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """A SentencePiece model without byte fallback, where `Yes` and `No` are whole pieces."""
    root = tmp_path_factory.mktemp("answer_spm")
    lines = [
        " ".join(CORPUS_WORDS[(i + j) % len(CORPUS_WORDS)] for j in range(8)) for i in range(300)
    ]
    (root / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(root / "corpus.txt"),
        model_prefix=str(root / "spm"),
        vocab_size=39,
        hard_vocab_limit=False,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        character_coverage=1.0,
        minloglevel=2,
    )
    return str(root / "spm.model")


def test_default_words_equal_label_token_ids(demo_vocabulary):
    assert vocab.answer_token_ids(demo_vocabulary) == vocab.label_token_ids(demo_vocabulary)
    assert vocab.DEFAULT_ANSWER_WORDS == ("1", "0")


def test_ids_are_each_words_first_piece(demo_vocabulary):
    # Independent lookup with the SentencePiece processor itself.
    processor = spm.SentencePieceProcessor(model_file=vocab.demo_vocab_path())
    for words in (("Yes", "No"), ("ja", "nein"), ("1", "0")):
        expected = tuple(processor.encode(w)[0] for w in words)
        assert vocab.answer_token_ids(demo_vocabulary, words) == expected
    yes_id, no_id = vocab.answer_token_ids(demo_vocabulary, ("Yes", "No"))
    assert demo_vocabulary.decode([yes_id]) != demo_vocabulary.decode([no_id])


def test_whole_piece_words_in_a_tiny_vocabulary(tiny_model):
    tiny = seqio.SentencePieceVocabulary(tiny_model)
    processor = spm.SentencePieceProcessor(model_file=tiny_model)
    yes_id, no_id = vocab.answer_token_ids(tiny, ("Yes", "No"))
    assert processor.id_to_piece(yes_id) == "\u2581Yes"
    assert processor.id_to_piece(no_id) == "\u2581No"
    # The same vocabulary through the project's path lookup.
    assert vocab.answer_token_ids(vocab.get_vocabulary(tiny_model), ("Yes", "No")) == (
        yes_id,
        no_id,
    )


def test_words_sharing_their_first_piece_are_refused(tiny_model):
    tiny = seqio.SentencePieceVocabulary(tiny_model)
    with pytest.raises(errors.UserError, match="share their first piece"):
        vocab.answer_token_ids(tiny, ("No", "No good"))


def test_unknown_and_empty_words_are_refused(tiny_model):
    tiny = seqio.SentencePieceVocabulary(tiny_model)
    with pytest.raises(errors.UserError, match="unknown piece"):
        vocab.answer_token_ids(tiny, ("Да", "No"))
    with pytest.raises(errors.UserError, match="encodes to no token"):
        vocab.answer_token_ids(tiny, ("Yes", " "))
    with pytest.raises(errors.UserError, match="two answer words"):
        vocab.answer_token_ids(tiny, ("Yes",))


def test_parse_answer_words():
    assert vocab.parse_answer_words("Yes,No") == ("Yes", "No")
    assert vocab.parse_answer_words(" Ja , Nein ") == ("Ja", "Nein")
    for bad in ("Yes", "Yes,No,Maybe", "Yes,", ",No"):
        with pytest.raises(errors.UserError, match="two comma-separated words"):
            vocab.parse_answer_words(bad)
    with pytest.raises(errors.UserError, match="the same"):
        vocab.parse_answer_words("Yes,Yes")
