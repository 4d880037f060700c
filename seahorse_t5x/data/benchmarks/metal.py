"""METAL (Hada et al. 2024): GPT-4 summaries of XL-Sum test articles with human and LLM
ratings on five metrics, joined with their articles by `XLSum_ID` (docs/benchmarks.md).

Paths come from arguments, gin (`seahorse_t5x.data.benchmarks.benchmark_paths.metal`,
`.xlsum_articles`) or `SEAHORSE_METAL_PATH` and `SEAHORSE_XLSUM_ARTICLES`.
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Sequence

from seahorse_t5x import errors, fileio
from seahorse_t5x.data import scorefiles
from seahorse_t5x.data.benchmarks import common, registry

ENV_METAL_PATH = "SEAHORSE_METAL_PATH"
ENV_XLSUM_ARTICLES = "SEAHORSE_XLSUM_ARTICLES"
# The release's file (under `data/` in its checkout).
METAL_FILE = "METAL_dataset.json"
_METAL_EXPECTED = "a JSON object of METAL records keyed by record id"

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
    **common.XLSUM_NAME_TO_CODE,
}
METAL_LANGUAGES: tuple[str, ...] = ("ar", "bn", "en", "fr", "hi", "ja", "ru", "sw", "tr", "zh")


def metal_path(path: str | None = None) -> str:
    """METAL_dataset.json: argument, then gin binding, then `SEAHORSE_METAL_PATH`."""
    path = path or common.benchmark_paths()["metal"]
    return common.resolve_path(path, ENV_METAL_PATH, "METAL JSON", METAL_SOURCE)


def xlsum_articles_path(path: str | None = None) -> str:
    """XL-Sum test articles for METAL: argument, gin, then `SEAHORSE_XLSUM_ARTICLES`."""
    path = path or common.benchmark_paths()["xlsum_articles"]
    return common.resolve_path(
        path, ENV_XLSUM_ARTICLES, "XL-Sum articles file", XLSUM_ARTICLES_SOURCE
    )


def read_xlsum_articles(path: str | os.PathLike | None = None) -> dict[str, str]:
    """Reads XL-Sum articles from JSON Lines: id (`id` or `gem_id`) -> article text.

    Raises:
      UserError: the file is missing; DataError: a line is not a JSON object with an id and
        an article (`article` or `text`).
    """
    p = common.existing_file(
        path or xlsum_articles_path(), "XL-Sum articles file", XLSUM_ARTICLES_SOURCE
    )
    articles: dict[str, str] = {}
    for line_number, record in fileio.iter_json_objects(p):
        key = record.get("id", record.get("gem_id"))
        text = record.get("article", record.get("text"))
        if not isinstance(key, str) or not key:
            raise errors.DataError(str(p), line_number, "id", "missing id (or gem_id)")
        if not isinstance(text, str):
            raise errors.DataError(str(p), line_number, "article", "missing article text")
        articles.setdefault(key.removeprefix("GEM-"), text)
    if not articles:
        raise fileio.empty_file_error(p, "one JSON object per line with an id and its article")
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
        return common.float_field(word)
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
      UserError: the file is missing; DataError: not UTF-8 (file:line), not JSON, or not a
        JSON object.
    """
    p = common.release_path(path or metal_path(), (METAL_FILE,), "METAL JSON", METAL_SOURCE)
    data = fileio.read_json(p, _METAL_EXPECTED)
    if not isinstance(data, dict):
        raise errors.DataError(str(p), None, None, "expected a JSON object keyed by record id")
    if not data:
        raise fileio.empty_file_error(p, _METAL_EXPECTED)
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
) -> common.ReadResult:
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
    return common.ReadResult(where, examples, drops)


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
) -> common.ReadResult:
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
    return common.ReadResult(str(p), examples, drops)


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
) -> common.ReadResult:
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
                        scorefiles.score_row(
                            metric=metal_llm_metric_name(evaluator, prompt),
                            benchmark=METAL_BENCHMARK,
                            question=metric,
                            label=item["label"],
                            score=metal_label([value], metric),
                            details={"llm_score": value},
                            slices=item,
                            extra={"xlsum_id": item["xlsum_id"]},
                        )
                    )
    return common.ReadResult(str(p), rows, drops)


def read_all(
    path: str, xlsum_articles: str | None = None, labels_only: bool = False
) -> list[common.ReadResult]:
    """Every METAL metric (the registry's reader), joined with the XL-Sum articles
    (`xlsum_articles`, else `SEAHORSE_XLSUM_ARTICLES`); `labels_only`: without articles
    (`read_metal_labels`, enough to join scores by id)."""
    if labels_only:
        return [read_metal_labels(path, metric) for metric in METAL_METRICS]
    articles = read_xlsum_articles(xlsum_articles)
    return [read_metal(path, metric, articles) for metric in METAL_METRICS]


def task_name(metric: str, language: str | None = None) -> str:
    """`metal_task_quality`, or `metal_task_quality.hi` for one language."""
    name = f"{METAL_BENCHMARK}_{metric}"
    return name if language is None else f"{name}.{language}"


def task_names(with_languages: bool = True) -> list[str]:
    """Its score tasks: per metric, all languages, then one per language."""
    out = []
    for metric in METAL_METRICS:
        out.append(task_name(metric))
        if with_languages:
            out += [task_name(metric, language) for language in METAL_LANGUAGES]
    return out


def task_question(name: str) -> str | None:
    """The metric of a METAL task name (any language suffix), else None."""
    base = name.split(".")[0]
    return next((m for m in METAL_METRICS if base == task_name(m)), None)


BENCHMARK = registry.Benchmark(
    name=METAL_BENCHMARK,
    title="METAL",
    read=read_all,
    dimensions=tuple(METAL_METRICS),
    label_kind=registry.LABEL_GRADED,
    key=("gem_id", "system"),
    protocol=registry.Protocol(
        registry.PAPER,
        ("pearson", "spearman", "kendall"),
        description="Pearson, Spearman and Kendall against the annotators' mean",
    ),
    env=ENV_METAL_PATH,
    source=METAL_SOURCE,
    questions={
        "linguistic_acceptability": 3,
        "task_quality": 5,
        "output_content_quality": 6,
        "hallucinations": 4,
        "problematic_content": 1,
    },
    mixture="metal_all",
    options=("xlsum_articles", "labels_only"),
    tasks=registry.TaskNames(task_names, task_question),
)
