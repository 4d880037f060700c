"""SummEval (Fabbri et al. 2021): 16 systems' summaries of 100 CNN/DM articles, rated 1-5 by
three experts for coherence, consistency, fluency and relevance (docs/benchmarks.md).

Read from `model_annotations.aligned.paired.jsonl` (the articles in `text`, as the
release's `data_processing/pair_data.py` writes it), or from the unpaired
`model_annotations.aligned.jsonl` with the articles in a JSON Lines file of
`{"id": ..., "text": ...}` (`article` accepted too). The path is a file or a folder holding
one of the two; it comes from an argument, gin
(`seahorse_t5x.data.benchmarks.benchmark_paths.summeval`) or `SEAHORSE_SUMMEVAL_PATH`.
"""

from __future__ import annotations

import math
import os
import pathlib

from seahorse_t5x import errors, fileio
from seahorse_t5x.data.benchmarks import common, registry

ENV_SUMMEVAL_PATH = "SEAHORSE_SUMMEVAL_PATH"
SUMMEVAL_SOURCE = (
    "Yale-LILY/SummEval: model_annotations.aligned.paired.jsonl (its README's Google Cloud "
    "link, paired with the CNN/DM stories by data_processing/pair_data.py)"
)
SUMMEVAL_FILES: tuple[str, ...] = (
    "model_annotations.aligned.paired.jsonl",
    "model_annotations.aligned.jsonl",
)
SUMMEVAL_DIMENSIONS: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")
# The experts' three ratings per summary; their mean is the human score.
SUMMEVAL_EXPERTS = 3
_REQUIRED = ("id", "model_id", "decoded", "expert_annotations")


def summeval_file(path: str | os.PathLike) -> pathlib.Path:
    """The annotations file: `path` itself, or the first of `SUMMEVAL_FILES` in a folder or
    under the release checkout's `data/` (`common.release_path`)."""
    return common.release_path(path, SUMMEVAL_FILES, "SummEval annotations", SUMMEVAL_SOURCE)


def read_articles(path: str | os.PathLike) -> dict[str, str]:
    """CNN/DM articles for the unpaired file: JSON Lines `{"id", "text" | "article"}`.

    Raises:
      UserError: missing file; DataError: a line without an id or text.
    """
    p = common.existing_file(path, "SummEval articles", "a JSON Lines export of CNN/DM")
    articles: dict[str, str] = {}
    for line, record in fileio.iter_json_objects(p):
        key = record.get("id")
        text = record.get("text", record.get("article"))
        if not isinstance(key, str) or not isinstance(text, str):
            raise errors.DataError(str(p), line, "id", "expected a string id and text")
        articles.setdefault(key, text)
    if not articles:
        raise fileio.empty_file_error(p, "one JSON object per line with an id and its text")
    return articles


def _expert_mean(annotations: object, dimension: str) -> float | None:
    """The mean of the experts' ratings of `dimension` (1-5; `3.0` is 3), or None."""
    if not isinstance(annotations, list) or len(annotations) != SUMMEVAL_EXPERTS:
        return None
    values = []
    for rater in annotations:
        value = rater.get(dimension) if isinstance(rater, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value) or not 1 <= value <= 5:
            return None
        values.append(float(value))
    return sum(values) / len(values)


def read_summeval(
    path: str | os.PathLike, articles: str | os.PathLike | None = None
) -> list[common.ReadResult]:
    """Reads every SummEval dimension: one `ReadResult` per dimension.

    Args:
      path: the paired or unpaired JSON Lines file, or a folder holding one.
      articles: JSON Lines articles for records without `text` (the unpaired file).

    Returns:
      Per dimension, items with `label` = the mean of the three experts (1-5), `gem_id` =
      the document id (`id`, shared by its 16 summaries), `system` = `model_id`. A line
      that is not a JSON object, a record missing `id`, `model_id`, `decoded` or
      `expert_annotations`, without an article, or whose experts' ratings of a dimension
      are not three numbers in 1-5, is a counted drop (per dimension).

    Raises:
      UserError: the file is missing; DataError: it is empty.
    """
    p = summeval_file(path)
    by_id = read_articles(articles) if articles else {}
    results = {d: common.ReadResult(str(p), []) for d in SUMMEVAL_DIMENSIONS}
    lines = 0
    for line, record in fileio.iter_json_lines(p):
        lines += 1

        def drop(field: str | None, reason: str, line: int = line) -> None:
            for result in results.values():
                result.dropped.append(errors.DataError(str(p), line, field, reason))

        if isinstance(record, errors.DataError):
            for result in results.values():
                result.dropped.append(record)
            continue
        missing = [f for f in _REQUIRED if f not in record]
        if missing:
            drop(missing[0], "field missing")
            continue
        doc_id, system = str(record["id"]).strip(), str(record["model_id"]).strip()
        summary = record["decoded"]
        article = record.get("text") or by_id.get(doc_id)
        if not isinstance(summary, str) or not summary.strip():
            drop("decoded", "empty summary")
            continue
        if not isinstance(article, str) or not article.strip():
            drop("text", "no article (pass the articles for the unpaired file)")
            continue
        for dimension, result in results.items():
            label = _expert_mean(record["expert_annotations"], dimension)
            if label is None:
                result.dropped.append(
                    errors.DataError(
                        str(p),
                        line,
                        f"expert_annotations.{dimension}",
                        f"expected {SUMMEVAL_EXPERTS} ratings in 1-5",
                    )
                )
                continue
            result.examples.append(
                {
                    "premise": article.strip(),
                    "hypothesis": summary.strip(),
                    "label": label,
                    "gem_id": doc_id,
                    "language": "en",
                    "dataset": "cnndm",
                    "system": system,
                    "split": "test",
                    "question": dimension,
                }
            )
    if not lines:
        raise fileio.empty_file_error(
            p, "one JSON object per line with id, model_id, decoded and expert_annotations"
        )
    return list(results.values())


BENCHMARK = registry.Benchmark(
    key_aliases={"gem_id": ("id",), "system": ("model_id",), "summary": ("decoded",)},
    row_fields=("split",),
    name="summeval",
    title="SummEval",
    read=read_summeval,
    dimensions=SUMMEVAL_DIMENSIONS,
    label_kind=registry.LABEL_GRADED,
    key=("gem_id", "system"),
    protocol=registry.Protocol(
        registry.SUMMARY_SYSTEM,
        ("kendall", "spearman", "pearson"),
        description="summary level (per document over its systems, mean over documents; "
        "constant documents skipped and counted) and system level (per-system means)",
    ),
    env=ENV_SUMMEVAL_PATH,
    source=SUMMEVAL_SOURCE,
    questions={"coherence": 1, "consistency": 4, "fluency": 3, "relevance": 5},
    options=("articles",),
)
