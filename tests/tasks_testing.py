"""Helpers for the preprocessor and task tests: a small vocabulary, token-exact texts."""

from __future__ import annotations

import os
import pathlib

from seahorse_t5x.formats import vocab

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "tasks"

# Words for the throwaway vocabulary's corpus, used only while the demo vocabulary is absent.
_CORPUS_WORDS = (
    "the a cat dog sat on mat premise hypothesis question article summary news report "
    "said people city government year new first 1 0 schools trips team cup plant water "
    "comprehensible grammatical concise attributable to main ideas captures free of repetition"
).split()


def vocabulary_file(tmp_dir: pathlib.Path) -> str:
    """The shipped demo vocabulary, or (while it is absent) a tiny one trained here.

    The trained one uses byte fallback, so every text survives an encode/decode round trip.
    """
    demo = vocab.demo_vocab_path()
    if os.path.exists(demo):
        return demo
    import sentencepiece as spm

    corpus = tmp_dir / "corpus.txt"
    lines = [
        " ".join(_CORPUS_WORDS[(i * 7 + j) % len(_CORPUS_WORDS)] for j in range(12))
        for i in range(500)
    ]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    prefix = tmp_dir / "spm"
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(prefix),
        vocab_size=400,
        hard_vocab_limit=False,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        byte_fallback=True,
        character_coverage=1.0,
        minloglevel=2,
    )
    return f"{prefix}.model"


def words_with_tokens(vocabulary, n_tokens: int, seed_words: tuple[str, ...]) -> str:
    """A text of whole words that encodes to exactly `n_tokens` tokens.

    SentencePiece tokenizes each space-separated word on its own, so token counts add up
    word by word; a one-token word fills the remainder.
    """
    single = next(w for w in ("the", "a", "cat", "to", "of", "1") if len(vocabulary.encode(w)) == 1)
    words: list[str] = []
    total = 0
    i = 0
    while total < n_tokens:
        word = seed_words[i % len(seed_words)]
        i += 1
        cost = len(vocabulary.encode(word))
        if total + cost > n_tokens:
            word, cost = single, 1
        words.append(word)
        total += cost
    text = " ".join(words)
    assert len(vocabulary.encode(text)) == n_tokens
    return text


def roundtrip(vocabulary, text: str) -> str:
    """What decoding `text`'s tokens gives back (the text itself where the vocabulary covers it)."""
    return vocabulary.decode(vocabulary.encode(text))
