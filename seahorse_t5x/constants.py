"""Names and ids shared by every layer: questions, languages, datasets, feature keys.

One place for them, so readers, tasks, metrics and reports agree on spelling.
"""

from __future__ import annotations

# The `benchmark` of score-file rows for SEAHORSE items (docs/architecture.md, score files).
SEAHORSE_BENCHMARK = "seahorse"
# What an item is sliced by: the fields a split-file row, a benchmark example and a score-file
# row carry under these names, in this order (`report --by` groups by them).
SLICE_FIELDS: tuple[str, ...] = ("gem_id", "language", "dataset", "system")

# The six SEAHORSE questions, 1-based as in the paper and the TSV columns.
QUESTIONS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
QUESTION_NAMES: dict[int, str] = {
    1: "comprehensible",
    2: "repetition",
    3: "grammar",
    4: "attribution",
    5: "main_ideas",
    6: "conciseness",
}
# How the multi-question model is told which question to answer (in its input text).
QUESTION_PROMPTS: dict[int, str] = {
    1: "comprehensible",
    2: "free of repetition",
    3: "grammatical",
    4: "attributable to the article",
    5: "captures the main ideas",
    6: "concise",
}
# Columns of the SEAHORSE TSV files and of the joined split files.
TSV_QUESTION_COLUMNS: tuple[str, ...] = tuple(f"question{q}" for q in QUESTIONS)
LABEL_FIELDS: tuple[str, ...] = tuple(f"q{q}" for q in QUESTIONS)
TSV_COLUMNS: tuple[str, ...] = (
    "gem_id",
    "worker_lang",
    "summary",
    "model",
    *TSV_QUESTION_COLUMNS,
)

# SEAHORSE languages (2-letter codes used everywhere in this project) and how the TSV's
# `worker_lang` column spells them.
LANGUAGES: tuple[str, ...] = ("de", "en", "es", "ru", "tr", "vi")
WORKER_LANG_TO_LANGUAGE: dict[str, str] = {
    "de": "de",
    "en-US": "en",
    "es-ES": "es",
    "ru": "ru",
    "tr": "tr",
    "vi": "vi",
}
LANGUAGE_NAMES: dict[str, str] = {
    "de": "german",
    "en": "english",
    "es": "spanish",
    "ru": "russian",
    "tr": "turkish",
    "vi": "vietnamese",
}

DATASETS: tuple[str, ...] = ("xsum", "xlsum", "mlsum", "wikilingua")
SYSTEMS: tuple[str, ...] = (
    "reference",
    "t5_base",
    "t5_base_250",
    "t5_xxl",
    "mt5_small",
    "mt5_small_250",
    "mt5_xxl",
    "palm_1shot",
    "palm_finetuned",
)
SPLITS: tuple[str, ...] = ("train", "validation", "test")

# Label strings in the TSV files and what they become.
LABEL_YES = "Yes"
LABEL_NO = "No"
LABEL_UNSURE = "Unsure"

# Target strings of the text-to-text metric.
TARGET_YES = "1"
TARGET_NO = "0"

# Input length of the paper's models (the input's format and its shortest length:
# `seahorse_t5x.formats.input_format`).
DEFAULT_INPUT_LENGTH = 2048
# T5 special ids: padding (also the decoder start) and end of sequence.
PAD_ID = 0
EOS_ID = 1
DECODER_START_ID = 0

# Environment variables the project reads (paths never live in module constants).
ENV_DATA_DIR = "SEAHORSE_DATA_DIR"
ENV_VOCAB = "SEAHORSE_VOCAB"
# A user's rating set's data folder: this prefix + the set's name in upper case
# (`SEAHORSE_RATINGS_DIR_CHAT` for the set `chat`; data/ratings.py).
ENV_RATINGS_DIR_PREFIX = "SEAHORSE_RATINGS_DIR_"

# XLA passes scoring programs compile without where the weights are not float32 and XLA's
# CPU compiler plans or runs them: it computes bfloat16 products in float32, and its
# loop-invariant code motion then converts every layer's weights to float32 ahead of the
# layer loop, which GPUs and TPUs never do (`inference.engine`, `runner.plan`).
LAYER_LOOP_DISABLED_PASSES = ("while-loop-invariant-code-motion",)
