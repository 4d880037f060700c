"""Builds the demo SentencePiece vocabularies shipped in seahorse_t5x/assets/: demo_spm.model
(the metrics' inputs) and, with --explanations, demo_explanations_spm.model.

A small unigram model trained on the synthetic demo dataset (all languages, articles and
summaries) plus the words of the metric's input format, with T5's id conventions
(pad 0, eos 1, unk 2, no bos). The targets `1` and `0` are the single pieces `▁1` and
`▁0` (user-defined symbols), so `vocab.label_token_ids` finds them. Training is deterministic (one
thread, every sentence, fixed data seed), so rerunning this script reproduces the
shipped file byte for byte.

The explanations' vocabulary (`--vocab demo_explanations`) is trained on the same texts plus
the demo's error analyses (`data/demo_explanations.py`, the train split) and TIGERScore's
prompt, so the analyses' English labels (`Error location 1:`) are a few pieces each rather
than one piece a letter: a demo explainer's targets average about a third of their length
in the metrics' vocabulary. `:` is a piece of its own (the metrics' vocabulary has none).

usage: python scripts/build_demo_vocab.py [--explanations] [--output PATH]
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
ASSETS = pathlib.Path(__file__).resolve().parents[1] / "seahorse_t5x/assets"
DEFAULT_OUTPUT = ASSETS / "demo_spm.model"
EXPLANATIONS_OUTPUT = ASSETS / "demo_explanations_spm.model"
EXPLANATIONS_VOCAB_SIZE = 4000
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


def explanation_sentences(seed: int = DATA_SEED) -> list[str]:
    """`training_sentences` plus the train split's error analyses (one line each, as
    SentencePiece sees them) and TIGERScore's prompt around them, in a fixed order."""
    from seahorse_t5x.data import demo_explanations
    from seahorse_t5x.formats import error_analysis

    data = demo_data.generate(seed)
    sentences = training_sentences(seed)
    for row, defects in zip(data.rows["train"], data.defects["train"], strict=True):
        analysis = demo_explanations.analysis(row["summary"], defects)
        sentences.append(" ".join(error_analysis.render_analysis(analysis).split("\n")))
    head, _, tail = error_analysis.prompt_parts(demo_explanations.INSTRUCTION, "", "", None)
    prompt = " ".join((error_analysis.INST + " " + head + " " + tail).split())
    sentences.extend([prompt] * FORMAT_REPEATS)
    return sentences


def explanation_pieces() -> tuple[str, ...]:
    """The metrics' whole pieces, `:`, and the analyses' fixed words (labels, severities,
    the summarization aspects, the first line's words) kept whole."""
    from seahorse_t5x.formats import error_analysis

    fixed = " ".join(
        (
            *error_analysis.LABELS,
            *error_analysis.SEVERITIES,
            *error_analysis.aspects_for(error_analysis.SUMMARIZATION),
            error_analysis.HEADER.format(count="", total=""),
        )
    )
    words = sorted({f"▁{w.strip('.,')}" for w in fixed.split() if len(w.strip(".,")) >= 4})
    return (*USER_DEFINED_PIECES, ":", *(w for w in words if w not in USER_DEFINED_PIECES))


def build_model(
    seed: int = DATA_SEED,
    vocab_size: int = VOCAB_SIZE,
    sentences: list[str] | None = None,
    user_defined: tuple[str, ...] = USER_DEFINED_PIECES,
) -> bytes:
    """Trains a demo SentencePiece model (default: the metrics') and returns its bytes."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences(seed) if sentences is None else sentences),
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
        user_defined_symbols=list(user_defined),
        minloglevel=2,
    )
    return model.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explanations", action="store_true")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    if args.explanations:
        size, output = EXPLANATIONS_VOCAB_SIZE, args.output or EXPLANATIONS_OUTPUT
        model = build_model(
            vocab_size=size, sentences=explanation_sentences(), user_defined=explanation_pieces()
        )
    else:
        size, output = VOCAB_SIZE, args.output or DEFAULT_OUTPUT
        model = build_model()
    pathlib.Path(output).write_bytes(model)
    print(f"wrote {output} ({len(model)} bytes, {size} pieces)")


if __name__ == "__main__":
    main()
