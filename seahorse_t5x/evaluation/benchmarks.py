"""Readers for the outside benchmarks: mFACE, TRUE, METAL, and local NLI files (FEVER, VitaminC).

Plain Python: no TensorFlow here, so the readers serve the SeqIO tasks, the model-free
baselines and the report alike. Every reader returns a `ReadResult`: the kept examples as
raw example dicts in the form the shared premise/hypothesis preprocessors expect
(`premise`, `hypothesis`, `label`, and the metadata strings `gem_id`, `language`,
`dataset`, `system`), plus one `errors.DataError` per dropped row (file, line, field,
reason), so no row is lost silently.

Paths come from arguments, gin (`seahorse_t5x.evaluation.benchmarks.benchmark_paths.mface = ...`)
or the environment (`SEAHORSE_MFACE_PATH`, `SEAHORSE_TRUE_DIR`, `SEAHORSE_METAL_PATH`,
`SEAHORSE_XLSUM_ARTICLES`, `SEAHORSE_FEVER_NLI_DIR`, `SEAHORSE_VITAMINC_DIR`); a missing
file is a `UserError` that says where to get it. docs/benchmarks.md describes each format.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Iterator, Sequence

import gin

from seahorse_t5x import errors

ENV_MFACE_PATH = "SEAHORSE_MFACE_PATH"
ENV_TRUE_DIR = "SEAHORSE_TRUE_DIR"
ENV_METAL_PATH = "SEAHORSE_METAL_PATH"
ENV_XLSUM_ARTICLES = "SEAHORSE_XLSUM_ARTICLES"
ENV_FEVER_NLI_DIR = "SEAHORSE_FEVER_NLI_DIR"
ENV_VITAMINC_DIR = "SEAHORSE_VITAMINC_DIR"

# Raw example keys shared by every reader (the shared preprocessors' input).
TEXT_FIELDS: tuple[str, ...] = ("premise", "hypothesis")
METADATA_FIELDS: tuple[str, ...] = ("gem_id", "language", "dataset", "system")

# ----------------------------------------------------------------------------- mFACE

MFACE_SOURCE = (
    "the mFACE ratings spreadsheet linked from google-research/google-research mface/README.md "
    "(Google Drive), exported as CSV"
)
# mFACE question -> (SEAHORSE dimension name, the SEAHORSE question whose metric scores it).
# q1 "Is the summary comprehensible?" (Quality), q2 "Is all the information fully
# attributable to the article?" (Attribution), q3 "Is the summary a good summary of the
# article?" (Informativeness): the paper's Table 6 mapping to Q1, Q4 and Q6.
MFACE_DIMENSIONS: dict[str, tuple[str, int]] = {
    "quality": ("q1", 1),
    "attribution": ("q2", 4),
    "informativeness": ("q3", 6),
}
MFACE_COLUMNS: tuple[str, ...] = ("id", "lang", "split", "input", "summary", "system")
# The five SEAHORSE languages that XL-Sum (hence mFACE) covers: XL-Sum has no German.
MFACE_5LANG: tuple[str, ...] = ("en", "es", "ru", "tr", "vi")
# mFACE's `lang` holds XL-Sum language names; codes are accepted too.
_XLSUM_NAME_TO_CODE: dict[str, str] = {
    "english": "en",
    "spanish": "es",
    "russian": "ru",
    "turkish": "tr",
    "vietnamese": "vi",
    "french": "fr",
    "arabic": "ar",
    "bengali": "bn",
    "hindi": "hi",
    "japanese": "ja",
    "swahili": "sw",
    "chinese_simplified": "zh",
}
# A graded mFACE label (mean of three raters' 0/1 answers) counts as Yes for ROC-AUC when
# most raters said Yes.
MFACE_BINARY_THRESHOLD = 0.5
# mFACE's `split` column (XL-Sum split of the document) -> SeqIO split name.
MFACE_SPLITS: dict[str, str] = {"train": "train", "dev": "validation", "test": "test"}

# ----------------------------------------------------------------------------- TRUE

TRUE_SOURCE = (
    "google-research/true: run its src/download_datasets.py, which writes the *_download.csv files"
)
# Task key -> (file name, display name in the paper's Table 7), in the table's order.
TRUE_DATASETS: dict[str, tuple[str, str]] = {
    "frank": ("frank_valid_download.csv", "FRANK"),
    "summeval": ("summeval_download.csv", "SummEval"),
    "mnbn": ("mnbm_download.csv", "MNBN"),
    "qags_c": ("qags_cnndm_download.csv", "QAGS-C"),
    "qags_x": ("qags_xsum_download.csv", "QAGS-X"),
    "begin": ("begin_dev_download.csv", "BEGIN"),
    "q2": ("q2_download.csv", "Q2"),
    "dialfact": ("dialfact_valid_download.csv", "DialFact"),
    "fever": ("fever_dev_download.csv", "FEVER"),
    "vitaminc": ("vitc_dev_download.csv", "VitaminC"),
    "paws": ("paws_download.csv", "PAWS"),
}
TRUE_QUESTION = 4
TRUE_COLUMNS: tuple[str, ...] = ("grounding", "generated_text", "label")

# ----------------------------------------------------------------------------- METAL

METAL_SOURCE = "microsoft/METAL-Towards-Multilingual-Meta-Evaluation, file data/METAL_dataset.json"
XLSUM_ARTICLES_SOURCE = (
    "a JSON Lines export of XL-Sum's test split (csebuetnlp/xlsum or GEM/xlsum), one "
    '{"id": ..., "article": ...} object per line ("gem_id" and "text" are accepted too)'
)
# METAL metric -> (highest score, True when a high score means a problem is present).
METAL_METRICS: dict[str, tuple[int, bool]] = {
    "linguistic_acceptability": (2, False),
    "task_quality": (2, False),
    "output_content_quality": (2, False),
    "hallucinations": (1, True),
    "problematic_content": (1, True),
}
METAL_ANNOTATORS: tuple[str, ...] = ("A1", "A2", "A3")
# METAL writes some scores as words (its utils/constants.py `str_to_int`).
_METAL_WORD_SCORES: dict[str, int] = {
    "good": 2,
    "medium": 1,
    "bad": 0,
    "absent": 0,
    "present": 1,
}
_METAL_LANGUAGES: dict[str, str] = {
    "ar": "ar",
    "en": "en",
    "zh": "zh",
    "fr": "fr",
    "hi": "hi",
    "bn": "bn",
    "ja": "ja",
    "ru": "ru",
    "sw": "sw",
    "tr": "tr",
    **_XLSUM_NAME_TO_CODE,
}
METAL_LANGUAGES: tuple[str, ...] = ("ar", "bn", "en", "fr", "hi", "ja", "ru", "sw", "tr", "zh")

# ----------------------------------------------------------------------------- NLI files

NLI_SOURCES: dict[str, str] = {
    "fever": (
        "the FEVER-NLI release of Nie et al. 2019 (github.com/easonnie/combine-FEVER-NSMN, "
        "nli_fever.zip: train/dev/test_fitems.jsonl with query, context, label)"
    ),
    "vitaminc": (
        "VitaminC (github.com/TalSchuster/VitaminC, vitaminc.zip: train/dev/test.jsonl with "
        "claim, evidence, label; also HF tals/vitaminc)"
    ),
}
_NLI_PREMISE_KEYS: tuple[str, ...] = ("premise", "evidence", "context")
_NLI_HYPOTHESIS_KEYS: tuple[str, ...] = ("hypothesis", "claim", "query")
_NLI_LABEL_KEYS: tuple[str, ...] = ("label", "gold_label")
_NLI_POSITIVE = frozenset({"entailment", "entails", "supports", "support"})
_NLI_NEGATIVE = frozenset(
    {"neutral", "contradiction", "refutes", "refute", "not enough info", "nei"}
)


@dataclasses.dataclass
class ReadResult:
    """Examples read from one benchmark file, and the rows dropped on the way.

    Attributes:
      path: the file read.
      examples: raw example dicts (`premise`, `hypothesis`, `label`, metadata strings,
        and per-benchmark extras such as `label_binary`).
      dropped: one `DataError` per dropped row, saying where and why.
    """

    path: str
    examples: list[dict]
    dropped: list[errors.DataError] = dataclasses.field(default_factory=list)

    def drop_counts(self) -> dict[str, int]:
        """Number of dropped rows per field (`"row"` for whole-row problems)."""
        return dict(collections.Counter(d.field or "row" for d in self.dropped))

    def summary(self) -> str:
        """One line: kept and dropped counts, with the first drop as an example."""
        line = f"{self.path}: {len(self.examples)} examples kept, {len(self.dropped)} dropped"
        if self.dropped:
            counts = ", ".join(f"{k}: {v}" for k, v in sorted(self.drop_counts().items()))
            line += f" ({counts}; first: {self.dropped[0]})"
        return line


# ----------------------------------------------------------------------------- paths


def _resolve(path: str | None, env: str, what: str, source: str) -> str:
    chosen = path or os.environ.get(env)
    if not chosen:
        raise errors.UserError(
            f"no {what} given: pass its path, bind it in gin or set {env}. Get it from {source}."
        )
    return chosen


@gin.configurable(module="seahorse_t5x.evaluation.benchmarks")
def benchmark_paths(
    mface: str | None = None,
    true: str | None = None,
    metal: str | None = None,
    xlsum_articles: str | None = None,
    fever_nli_dir: str | None = None,
    vitaminc_dir: str | None = None,
) -> dict[str, str | None]:
    """The paths bound in gin (`seahorse_t5x.evaluation.benchmarks.benchmark_paths.mface = ...`).

    Kept free of checks so that gin never wraps a missing-file message: the `*_path`
    functions below add the environment and the error.
    """
    return {
        "mface": mface,
        "true": true,
        "metal": metal,
        "xlsum_articles": xlsum_articles,
        "fever": fever_nli_dir,
        "vitaminc": vitaminc_dir,
    }


def mface_path(path: str | None = None) -> str:
    """The mFACE CSV: argument, then gin binding, then `SEAHORSE_MFACE_PATH`."""
    path = path or benchmark_paths()["mface"]
    return _resolve(path, ENV_MFACE_PATH, "mFACE CSV", MFACE_SOURCE)


def true_dir(path: str | None = None) -> str:
    """The folder holding TRUE's CSVs: argument, then gin binding, then `SEAHORSE_TRUE_DIR`."""
    path = path or benchmark_paths()["true"]
    return _resolve(path, ENV_TRUE_DIR, "TRUE folder", TRUE_SOURCE)


def metal_path(path: str | None = None) -> str:
    """METAL_dataset.json: argument, then gin binding, then `SEAHORSE_METAL_PATH`."""
    path = path or benchmark_paths()["metal"]
    return _resolve(path, ENV_METAL_PATH, "METAL JSON", METAL_SOURCE)


def xlsum_articles_path(path: str | None = None) -> str:
    """XL-Sum test articles for METAL: argument, gin, then `SEAHORSE_XLSUM_ARTICLES`."""
    path = path or benchmark_paths()["xlsum_articles"]
    return _resolve(path, ENV_XLSUM_ARTICLES, "XL-Sum articles file", XLSUM_ARTICLES_SOURCE)


def nli_dir(name: str, path: str | None = None) -> str:
    """The folder of a local NLI release (`fever` or `vitaminc`): argument, gin, environment."""
    envs = {"fever": ENV_FEVER_NLI_DIR, "vitaminc": ENV_VITAMINC_DIR}
    if name not in envs:
        raise errors.UserError(f"unknown NLI release {name!r}: expected one of {sorted(envs)}")
    path = path or benchmark_paths()[name]
    return _resolve(path, envs[name], f"{name} NLI folder", NLI_SOURCES[name])


# SeqIO split -> file names tried in an NLI release folder, first found wins (VitaminC
# ships train/dev/test.jsonl, the FEVER-NLI release train/dev/test_fitems.jsonl).
NLI_SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.jsonl", "train_fitems.jsonl"),
    "validation": ("validation.jsonl", "dev.jsonl", "dev_fitems.jsonl"),
    "test": ("test.jsonl", "test_fitems.jsonl"),
}


def nli_split_file(name: str, split: str, directory: str | None = None) -> pathlib.Path:
    """The JSON Lines file of one split of a local NLI release.

    Raises:
      UserError: no file for the split in the folder (the message lists the names tried).
    """
    folder = pathlib.Path(nli_dir(name, directory))
    candidates = NLI_SPLIT_FILES.get(split, (f"{split}.jsonl",))
    for candidate in candidates:
        if (folder / candidate).is_file():
            return folder / candidate
    raise errors.UserError(
        f"no {split} file for {name} in {folder} (tried {', '.join(candidates)}). "
        f"Get it from {NLI_SOURCES[name]}."
    )


def _existing_file(path: str | os.PathLike, what: str, source: str) -> pathlib.Path:
    p = pathlib.Path(path)
    if not p.is_file():
        raise errors.UserError(f"{what} not found: {p}. Get it from {source}.")
    return p


# ----------------------------------------------------------------------------- CSV rows


def _csv_rows(path: pathlib.Path) -> Iterator[tuple[int, list[str]]]:
    """(line number where the record starts, fields) for each CSV record after the header."""
    # Articles are longer than csv's default 128 KiB field limit.
    csv.field_size_limit(2**31 - 1)
    # utf-8-sig: spreadsheet exports often start with a byte-order mark.
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        start = 1
        for fields in reader:
            yield start, fields
            start = reader.line_num + 1


def _header(path: pathlib.Path, rows: Iterator[tuple[int, list[str]]], required: Sequence[str]):
    try:
        _, header = next(rows)
    except StopIteration:
        raise errors.DataError(str(path), 1, None, "empty file: expected a header row") from None
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise errors.DataError(
            str(path), 1, None, f"missing columns {missing}; the header is {header}"
        )
    return header


def _float_field(value: str) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text_or_drop(row: dict, column: str, path: str, line: int, drops: list) -> str | None:
    text = (row.get(column) or "").strip()
    if not text:
        drops.append(errors.DataError(path, line, column, "empty text"))
        return None
    return text


# ----------------------------------------------------------------------------- mFACE


def normalize_language(value: str) -> str:
    """An XL-Sum language name or code as this project's code (`english` -> `en`).

    Names without a known code are kept, lower-cased, as they are.
    """
    text = value.strip().lower()
    return _XLSUM_NAME_TO_CODE.get(text, text)


def read_mface(
    path: str | os.PathLike | None,
    dimension: str,
    languages: Sequence[str] | None = None,
    splits: Sequence[str] | None = None,
) -> ReadResult:
    """Reads one mFACE dimension from the spreadsheet's CSV export.

    Args:
      path: the CSV (None: `mface_path()`).
      dimension: `quality`, `attribution` or `informativeness` (see `MFACE_DIMENSIONS`).
      languages: keep only these language codes (None: all 45 languages).
      splits: keep only rows whose `split` is one of these SeqIO split names (`train`,
        `validation`, `test`); None keeps every row.

    Returns:
      Examples with `label` = the raters' mean (`q{n}_avg`, in [0, 1]), `label_binary` =
      1 when that mean is above 0.5 (most raters said Yes), `question` = the dimension and
      `seahorse_question` = the SEAHORSE question whose metric scores it. Rows with empty text or a missing or
      out-of-range average are dropped and reported.

    Raises:
      UserError: the file is missing or lacks a required column; unknown dimension.
    """
    if dimension not in MFACE_DIMENSIONS:
        raise errors.UserError(
            f"unknown mFACE dimension {dimension!r}: expected one of {list(MFACE_DIMENSIONS)}"
        )
    column_prefix, question = MFACE_DIMENSIONS[dimension]
    label_column = f"{column_prefix}_avg"
    p = _existing_file(path or mface_path(), "mFACE CSV", MFACE_SOURCE)
    rows = _csv_rows(p)
    header = _header(p, rows, (*MFACE_COLUMNS, label_column))
    keep_languages = None if languages is None else {normalize_language(x) for x in languages}
    keep_splits = None if splits is None else set(splits)
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line, fields in rows:
        if not any(f.strip() for f in fields):
            continue  # blank trailing lines in spreadsheet exports
        if len(fields) != len(header):
            drops.append(
                errors.DataError(
                    str(p), line, None, f"{len(fields)} fields, the header has {len(header)}"
                )
            )
            continue
        row = dict(zip(header, fields, strict=True))
        language = normalize_language(row["lang"])
        split = MFACE_SPLITS.get(row["split"].strip().lower(), row["split"].strip().lower())
        if keep_languages is not None and language not in keep_languages:
            continue
        if keep_splits is not None and split not in keep_splits:
            continue
        label = _float_field(row[label_column])
        if label is None or not 0.0 <= label <= 1.0:
            drops.append(
                errors.DataError(
                    str(p),
                    line,
                    label_column,
                    f"{row[label_column]!r} is not a mean rating in [0, 1]",
                )
            )
            continue
        article = _text_or_drop(row, "input", str(p), line, drops)
        summary = article and _text_or_drop(row, "summary", str(p), line, drops)
        if not summary:
            continue
        examples.append(
            {
                "premise": article,
                "hypothesis": summary,
                "label": label,
                "label_binary": int(label > MFACE_BINARY_THRESHOLD),
                "gem_id": row["id"].strip(),
                "language": language,
                "dataset": "xlsum",
                "system": row["system"].strip(),
                "split": split,
                "question": dimension,
                "seahorse_question": question,
            }
        )
    return ReadResult(str(p), examples, drops)


# ----------------------------------------------------------------------------- TRUE


def true_file(dataset: str, directory: str | os.PathLike | None = None) -> pathlib.Path:
    """Path of one TRUE dataset's CSV (`dataset` is a key of `TRUE_DATASETS`)."""
    if dataset not in TRUE_DATASETS:
        raise errors.UserError(
            f"unknown TRUE dataset {dataset!r}: expected one of {list(TRUE_DATASETS)}"
        )
    return pathlib.Path(directory or true_dir()) / TRUE_DATASETS[dataset][0]


def _binary_label(value: str) -> int | None:
    number = _float_field(value)
    if number in (0.0, 1.0):
        return int(number)
    return None


def read_true(dataset: str, directory: str | os.PathLike | None = None) -> ReadResult:
    """Reads one TRUE dataset: `grounding` is the premise, `generated_text` the hypothesis.

    TRUE's download script writes each CSV with pandas' default index, so the header starts
    with an unnamed column; it is ignored (files written without it read the same).

    Returns:
      Examples with `label` 1 (consistent) or 0, `dataset` = the display name (`FRANK`, ...),
      `question` = 4. Rows with empty text or a label other than 0/1 are dropped and reported.

    Raises:
      UserError: the file is missing or lacks `grounding`, `generated_text` or `label`.
    """
    p = _existing_file(true_file(dataset, directory), f"TRUE {dataset} CSV", TRUE_SOURCE)
    display = TRUE_DATASETS[dataset][1]
    rows = _csv_rows(p)
    header = _header(p, rows, TRUE_COLUMNS)
    model_column = "model" if "model" in header else None
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line, fields in rows:
        if not any(f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            drops.append(
                errors.DataError(
                    str(p), line, None, f"{len(fields)} fields, the header has {len(header)}"
                )
            )
            continue
        row = dict(zip(header, fields, strict=True))
        label = _binary_label(row["label"])
        if label is None:
            drops.append(errors.DataError(str(p), line, "label", f"{row['label']!r} is not 0 or 1"))
            continue
        grounding = _text_or_drop(row, "grounding", str(p), line, drops)
        generated = grounding and _text_or_drop(row, "generated_text", str(p), line, drops)
        if not generated:
            continue
        # The unnamed index column (header "") numbers the rows; else the record's line.
        index = row.get("", "").strip() or str(line)
        examples.append(
            {
                "premise": grounding,
                "hypothesis": generated,
                "label": label,
                "gem_id": f"true_{dataset}-{index}",
                "language": "en",
                "dataset": display,
                "system": row.get(model_column, "").strip() if model_column else "",
                "question": TRUE_QUESTION,
            }
        )
    return ReadResult(str(p), examples, drops)


# ----------------------------------------------------------------------------- METAL


def read_xlsum_articles(path: str | os.PathLike | None = None) -> dict[str, str]:
    """Reads XL-Sum articles from JSON Lines: id (`id` or `gem_id`) -> article text.

    Raises:
      UserError: the file is missing; DataError: a line is not a JSON object with an id and
        an article (`article` or `text`).
    """
    p = _existing_file(path or xlsum_articles_path(), "XL-Sum articles file", XLSUM_ARTICLES_SOURCE)
    articles: dict[str, str] = {}
    with p.open(encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise errors.DataError(str(p), line_number, None, f"not JSON: {e}") from None
            if not isinstance(record, dict):
                raise errors.DataError(str(p), line_number, None, "expected a JSON object")
            key = record.get("id", record.get("gem_id"))
            text = record.get("article", record.get("text"))
            if not isinstance(key, str) or not key:
                raise errors.DataError(str(p), line_number, "id", "missing id (or gem_id)")
            if not isinstance(text, str):
                raise errors.DataError(str(p), line_number, "article", "missing article text")
            articles.setdefault(key.removeprefix("GEM-"), text)
    return articles


def _metal_score(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _METAL_WORD_SCORES:
            return float(_METAL_WORD_SCORES[word])
        return _float_field(word)
    return None


def metal_label(scores: Sequence[float], metric: str) -> float:
    """The graded METAL target: annotators' mean, scaled to [0, 1], higher = better.

    `hallucinations` and `problematic_content` are 1 when the problem is present, so they
    are flipped (1 - mean): every METAL label then reads like a SEAHORSE Yes-probability.
    """
    top, higher_is_worse = METAL_METRICS[metric]
    mean = sum(scores) / len(scores) / top
    return 1.0 - mean if higher_is_worse else mean


def _load_metal(path: str | os.PathLike | None) -> tuple[pathlib.Path, dict]:
    """METAL_dataset.json as (path, the dict keyed by record id).

    Raises:
      UserError: the file is missing; DataError: not JSON, or not a JSON object.
    """
    p = _existing_file(path or metal_path(), "METAL JSON", METAL_SOURCE)
    try:
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise errors.DataError(str(p), e.lineno, None, f"not JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise errors.DataError(str(p), None, None, "expected a JSON object keyed by record id")
    return p, data


def _metal_human_label(
    record: dict, metric: str, at: str, drops: list[errors.DataError]
) -> float | None:
    """`metal_label` of the record's annotator scores, or None (and a drop) without any."""
    human = record.get("Human_Scores")
    raters = human.get(metric) if isinstance(human, dict) else None
    if not isinstance(raters, dict):
        drops.append(errors.DataError(at, None, "Human_Scores", f"no {metric} scores"))
        return None
    top = METAL_METRICS[metric][0]
    scores = [_metal_score(raters.get(a)) for a in METAL_ANNOTATORS]
    scores = [s for s in scores if s is not None and 0 <= s <= top]
    if not scores:
        drops.append(
            errors.DataError(at, None, f"Human_Scores.{metric}", f"no annotator score in 0..{top}")
        )
        return None
    return metal_label(scores, metric)


def read_metal(
    path: str | os.PathLike | None,
    metric: str,
    articles: dict[str, str] | None = None,
    languages: Sequence[str] | None = None,
) -> ReadResult:
    """Reads one METAL metric, joined with its XL-Sum test article by `XLSum_ID`.

    METAL is a test set only: never train on it.

    Args:
      path: METAL_dataset.json (None: `metal_path()`).
      metric: a key of `METAL_METRICS`.
      articles: XL-Sum id -> article (None: `read_xlsum_articles()`).
      languages: keep only these language codes (None: all ten).

    Returns:
      Examples with the graded `label` of `metal_label`, the record key as `gem_id` and the
      metric name as `question`. Records without an article for their `XLSum_ID`, or without
      any valid annotator score, are dropped and reported.

    Raises:
      UserError: file missing, not a JSON object, or unknown metric.
    """
    if metric not in METAL_METRICS:
        raise errors.UserError(
            f"unknown METAL metric {metric!r}: expected one of {list(METAL_METRICS)}"
        )
    p, data = _load_metal(path)
    if articles is None:
        articles = read_xlsum_articles()
    keep = None if languages is None else set(languages)
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    where = str(p)
    for key, record in data.items():
        # JSON records have no useful line number: the record key locates them.
        at = f"{where}[{key}]"
        item = _metal_item(key, record, metric, at, drops, keep)
        if item is None:
            continue
        article = articles.get(item["xlsum_id"])
        if not article:
            drops.append(
                errors.DataError(at, None, "XLSum_ID", f"no article for {item['xlsum_id']!r}")
            )
            continue
        examples.append({"premise": article, **item})
    return ReadResult(where, examples, drops)


METAL_BENCHMARK = "metal"
# METAL's LLM evaluations: prompt style -> record field (its README, "Dataset").
METAL_LLM_PROMPTS: dict[str, str] = {
    "simple": "LLM_Scores_Simple",
    "detailed": "LLM_Scores_Detailed",
}


def metal_llm_metric_name(evaluator: str, prompt: str) -> str:
    """The score files' `metric` for one METAL LLM evaluator and prompt style.

    >>> metal_llm_metric_name("gpt-35-turbo", "detailed")
    'metal_gpt_35_turbo_detailed'
    """
    slug = "".join(c if c.isalnum() else "_" for c in evaluator.strip().lower()).strip("_")
    return f"metal_{slug}_{prompt}"


def read_metal_labels(
    path: str | os.PathLike | None,
    metric: str,
    languages: Sequence[str] | None = None,
) -> ReadResult:
    """METAL's human labels for one metric, without articles (for joins by record id).

    Returns:
      Examples with `gem_id` (the record key), `hypothesis` (the summary), `label`
      (`metal_label`), `question` (the metric), `language`, `dataset`, `system`, `xlsum_id`;
      records without annotator scores, summary or known language are dropped and reported.
    """
    p, data = _load_metal(path)
    keep = None if languages is None else set(languages)
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for key, record in data.items():
        at = f"{p}[{key}]"
        item = _metal_item(key, record, metric, at, drops, keep)
        if item is not None:
            examples.append(item)
    return ReadResult(str(p), examples, drops)


def _metal_item(
    key: str,
    record: object,
    metric: str,
    at: str,
    drops: list[errors.DataError],
    keep_languages: set[str] | None = None,
) -> dict | None:
    """One record's example for `metric` (no article), None when dropped or filtered out."""
    if not isinstance(record, dict):
        drops.append(errors.DataError(at, None, None, "record is not an object"))
        return None
    language = _METAL_LANGUAGES.get(str(record.get("Language", "")).strip().lower())
    if language is None:
        drops.append(errors.DataError(at, None, "Language", f"{record.get('Language')!r} unknown"))
        return None
    if keep_languages is not None and language not in keep_languages:
        return None
    label = _metal_human_label(record, metric, at, drops)
    if label is None:
        return None
    summary = str(record.get("Generated_Summary") or "").strip()
    if not summary:
        drops.append(errors.DataError(at, None, "Generated_Summary", "empty text"))
        return None
    return {
        "hypothesis": summary,
        "label": label,
        "gem_id": str(key),
        "language": language,
        "dataset": "xlsum",
        "system": f"gpt4_{str(record.get('Type', '')).strip().lower()}",
        "xlsum_id": str(record.get("XLSum_ID") or "").strip(),
        "question": metric,
    }


def read_metal_llm_scores(
    path: str | os.PathLike | None,
    metrics: Sequence[str] | None = None,
    prompts: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
) -> ReadResult:
    """METAL's own LLM scores as score-file rows, beside the human labels they are judged by.

    For each record, metric, prompt style (`simple`, `detailed`) and evaluator (`gpt-4`,
    `gpt-35-turbo`, `PaLM2`, or whatever keys the file holds): one row with `metric` =
    `metal_llm_metric_name(evaluator, prompt)`, `benchmark` = `metal`, `question` = the METAL
    metric, `label` = the annotators' `metal_label`, `score` = `metal_label([llm score])`
    (so higher = better for every metric, as the label) and the raw `llm_score`.

    Returns:
      A ReadResult whose `examples` are the score rows; a missing or out-of-range LLM score is
      a counted drop (record key, field path), never a guess.

    Raises:
      UserError: unknown metric or prompt, or a missing file.
    """
    metrics = list(metrics or METAL_METRICS)
    prompts = list(prompts or METAL_LLM_PROMPTS)
    for name, known, what in (
        *((m, METAL_METRICS, "metric") for m in metrics),
        *((p, METAL_LLM_PROMPTS, "prompt style") for p in prompts),
    ):
        if name not in known:
            raise errors.UserError(f"unknown METAL {what} {name!r}: expected one of {list(known)}")
    p, data = _load_metal(path)
    keep = None if languages is None else set(languages)
    rows: list[dict] = []
    drops: list[errors.DataError] = []
    for key, record in data.items():
        at = f"{p}[{key}]"
        for metric in metrics:
            item = _metal_item(key, record, metric, at, drops, keep)
            if item is None:
                continue
            top = METAL_METRICS[metric][0]
            for prompt in prompts:
                field = METAL_LLM_PROMPTS[prompt]
                block = record.get(field)
                scores = block.get(metric) if isinstance(block, dict) else None
                scores = scores.get("scores") if isinstance(scores, dict) else None
                if not isinstance(scores, dict) or not scores:
                    drops.append(errors.DataError(at, None, f"{field}.{metric}.scores", "missing"))
                    continue
                for evaluator, raw in scores.items():
                    value = _metal_score(raw)
                    if value is None or not 0 <= value <= top:
                        drops.append(
                            errors.DataError(
                                at,
                                None,
                                f"{field}.{metric}.scores.{evaluator}",
                                f"expected a score in 0..{top}, got {raw!r}",
                            )
                        )
                        continue
                    rows.append(
                        {
                            "metric": metal_llm_metric_name(evaluator, prompt),
                            "benchmark": METAL_BENCHMARK,
                            "question": metric,
                            "label": item["label"],
                            "score": metal_label([value], metric),
                            "llm_score": value,
                            **{k: item[k] for k in ("gem_id", "language", "dataset", "system")},
                            "xlsum_id": item["xlsum_id"],
                        }
                    )
    return ReadResult(str(p), rows, drops)


# ----------------------------------------------------------------------------- NLI files


def nli_label(value: object) -> int | None:
    """A string NLI label as 1 (entailment/SUPPORTS) or 0 (neutral, contradiction, REFUTES,
    NOT ENOUGH INFO); None for anything else (integer labels are ambiguous across releases)."""
    if not isinstance(value, str):
        return None
    word = value.strip().lower().replace("_", " ")
    if word in _NLI_POSITIVE:
        return 1
    if word in _NLI_NEGATIVE:
        return 0
    return None


def _first_key(record: dict, keys: Sequence[str]) -> str | None:
    return next((k for k in keys if k in record), None)


def read_nli_jsonl(path: str | os.PathLike, name: str) -> ReadResult:
    """Reads a local NLI file (FEVER-NLI, VitaminC) in JSON Lines.

    Fields: premise (`premise`, `evidence` or `context`), hypothesis (`hypothesis`, `claim`
    or `query`), label (`label` or `gold_label`: a string, see `nli_label`). Bad lines are
    dropped and reported.
    """
    p = _existing_file(path, f"{name} NLI file", NLI_SOURCES.get(name, "its release"))
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    with p.open(encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                drops.append(errors.DataError(str(p), line_number, None, f"not JSON: {e.msg}"))
                continue
            if not isinstance(record, dict):
                drops.append(errors.DataError(str(p), line_number, None, "not a JSON object"))
                continue
            keys = [
                _first_key(record, k)
                for k in (_NLI_PREMISE_KEYS, _NLI_HYPOTHESIS_KEYS, _NLI_LABEL_KEYS)
            ]
            if None in keys:
                missing = ["premise", "hypothesis", "label"][keys.index(None)]
                drops.append(errors.DataError(str(p), line_number, missing, "field missing"))
                continue
            premise_key, hypothesis_key, label_key = keys
            label = nli_label(record[label_key])
            if label is None:
                drops.append(
                    errors.DataError(
                        str(p), line_number, label_key, f"{record[label_key]!r} is not a label"
                    )
                )
                continue
            premise = str(record[premise_key] or "").strip()
            hypothesis = str(record[hypothesis_key] or "").strip()
            if not premise or not hypothesis:
                field = premise_key if not premise else hypothesis_key
                drops.append(errors.DataError(str(p), line_number, field, "empty text"))
                continue
            examples.append(
                {
                    "premise": premise,
                    "hypothesis": hypothesis,
                    "label": label,
                    "gem_id": str(record.get("id", f"{name}-{line_number}")),
                    "language": "en",
                    "dataset": name,
                    "system": "",
                }
            )
    return ReadResult(str(p), examples, drops)
