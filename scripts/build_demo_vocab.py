"""Builds the demo SentencePiece vocabulary shipped as seahorse_t5x/assets/demo_spm.model.

A small unigram model trained on the synthetic demo dataset (all languages, articles and
summaries) plus the words of the metric's input format, with T5's id conventions
(pad 0, eos 1, unk 2, no bos). The targets `1` and `0` are the single pieces `▁1` and
`▁0` (user-defined symbols), so `vocab.label_token_ids` finds them. Training is deterministic (one
thread, every sentence, fixed data seed), so rerunning this script reproduces the
shipped file byte for byte.

usage: python scripts/build_demo_vocab.py [--output seahorse_t5x/assets/demo_spm.model]
"""

from __future__ import annotations

import argparse
import io
import pathlib
import re

import sentencepiece as spm

from seahorse_t5x import constants
from seahorse_t5x.data import demo_data

VOCAB_SIZE = 3000
DATA_SEED = 0
DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parents[1] / "seahorse_t5x/assets/demo_spm.model"
# How often the input-format words and targets appear in the training text: enough that
# the unigram model keeps them as whole pieces.
FORMAT_REPEATS = 1000
# Pieces kept whole whatever the counts: the two targets (the score reads their logits at
# the first decoder step), the input-format field names and the longer words naming the
# questions. SentencePiece matches these greedily, also inside longer words, so short common
# words (`the`, `main`) are left to the learnt pieces.
USER_DEFINED_PIECES: tuple[str, ...] = (
    "▁1",
    "▁0",
    "▁premise:",
    "▁hypothesis:",
    "▁question:",
    *sorted(
        {f"▁{w}" for p in constants.QUESTION_PROMPTS.values() for w in p.split() if len(w) >= 5}
    ),
)


def training_sentences(seed: int = DATA_SEED) -> list[str]:
    """The demo texts the vocabulary is trained on, one sentence per line, in a fixed order."""
    data = demo_data.generate(seed)
    sentences: list[str] = []
    for article in data.articles.values():
        sentences.extend(s for s in re.split(r"(?<=\.) ", article) if s)
    for split in constants.SPLITS:
        sentences.extend(row["summary"] for row in data.rows[split])
    format_lines = [
        f"question: {prompt} premise: hypothesis:" for prompt in constants.QUESTION_PROMPTS.values()
    ]
    format_lines += [constants.TARGET_YES, constants.TARGET_NO]
    sentences.extend(format_lines * FORMAT_REPEATS)
    return sentences


def build_model(seed: int = DATA_SEED, vocab_size: int = VOCAB_SIZE) -> bytes:
    """Trains the demo SentencePiece model and returns its serialized bytes."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences(seed)),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        character_coverage=1.0,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        num_threads=1,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        user_defined_symbols=list(USER_DEFINED_PIECES),
        minloglevel=2,
    )
    return model.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT))
    args = parser.parse_args()
    model = build_model()
    pathlib.Path(args.output).write_bytes(model)
    print(f"wrote {args.output} ({len(model)} bytes, {VOCAB_SIZE} pieces)")


if __name__ == "__main__":
    main()
