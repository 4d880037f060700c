"""`prepare`: joins the SEAHORSE ratings with their articles into the split files.

Reads `train.tsv`, `validation.tsv` and `test.tsv` (never the `duplicates/` folder, whose
items overlap the splits), joins each row to its article by gem_id, and writes
`OUT/{split}.jsonl` (the joined split file contract of docs/architecture.md) and
`OUT/prepare_report.json`. Every row read is either kept or dropped with a reason, so
`rows_kept + rows_dropped == rows_read` for each split.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Callable, Mapping

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data import articles, readers, splits

REPORT_NAME = "prepare_report.json"
# Drop examples listed per split and reason; the counts are always complete.
MAX_DROP_EXAMPLES = 10
_GET_DATA_HINT = (
    "download https://storage.googleapis.com/seahorse-public/seahorse_data.zip, unzip it and "
    "pass the folder holding seahorse_data/ (see docs/data.md)"
)


def find_split_files(seahorse_dir: str) -> dict[str, str]:
    """The split TSV paths in `seahorse_dir` or `seahorse_dir/seahorse_data`.

    Raises:
      UserError: the folder or any of the three split files is missing.
    """
    if not os.path.isdir(seahorse_dir):
        raise errors.UserError(f"SEAHORSE folder not found: {seahorse_dir}; {_GET_DATA_HINT}")
    for folder in (seahorse_dir, os.path.join(seahorse_dir, "seahorse_data")):
        paths = {s: os.path.join(folder, f"{s}.tsv") for s in constants.SPLITS}
        if all(os.path.isfile(p) for p in paths.values()):
            return paths
        if any(os.path.isfile(p) for p in paths.values()):
            missing = [p for p in paths.values() if not os.path.isfile(p)]
            raise errors.UserError(f"missing SEAHORSE file(s) {', '.join(missing)}")
    raise errors.UserError(
        f"no train.tsv, validation.tsv and test.tsv in {seahorse_dir} or "
        f"{os.path.join(seahorse_dir, 'seahorse_data')}; {_GET_DATA_HINT}"
    )


def _joined_record(rating: readers.Rating, article: str) -> dict:
    texts = (rating.gem_id, rating.language, rating.dataset, rating.system, rating.summary, article)
    record = dict(zip(splits.TEXT_FIELDS, texts, strict=True))
    record.update(zip(splits.LABEL_FIELDS, rating.labels, strict=True))
    return record


def _label_counts(records: list[dict]) -> dict[str, dict[str, int]]:
    counts = {}
    for field in constants.LABEL_FIELDS:
        values = collections.Counter(r[field] for r in records)
        counts[field] = {
            "yes": values[1],
            "no": values[0],
            "null": values[None],
            "trainable": values[1] + values[0],
        }
    return counts


def _write_jsonl(path: str, records: list[dict]) -> None:
    # A crash or a full disk never leaves a half-written split file behind.
    with fileio.atomic_writer(path) as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def _split_line(split: str, report: dict, output: str) -> str:
    reasons = ", ".join(f"{k} {v}" for k, v in report["dropped_by_reason"].items() if v)
    dropped = f"dropped {report['rows_dropped']}" + (f" ({reasons})" if reasons else "")
    return (
        f"{split}: read {report['rows_read']} rows, kept {report['rows_kept']}, {dropped}"
        f" -> {output}"
    )


def _nothing_kept(
    seahorse_dir: str,
    report: dict,
    drops: list[readers.Drop],  # in split order, each split's in line order
    source_reports: list[articles.SourceReport],
) -> str:
    """The error when no rating row was kept: counts, top drop reasons, article sources."""
    by_reason = collections.Counter(d.reason for d in drops).most_common(3)
    reasons = ", ".join(f"{reason} {count}" for reason, count in by_reason)
    first = next((d for d in drops if by_reason and d.reason == by_reason[0][0]), None)
    records = sum(s.records_read for s in source_reports)
    added = sum(s.articles_added for s in source_reports)
    bad = sum(s.bad_records for s in source_reports)
    return (
        f"{seahorse_dir}: no rows kept of {report['totals']['rows_read']} read"
        + (f" ({reasons}; first: {first.as_error()})" if first else "")
        + f"; article sources: {records} records read, {added} articles for the ratings' "
        f"gem_ids, {bad} bad records (expected rating rows whose gem_id has an article in "
        "the article sources; nothing was written)"
    )


def prepare(
    seahorse_dir: str,
    article_sources: list[str],
    output_dir: str,
    strict: bool = False,
    log: Callable[[str], None] | None = print,
) -> dict:
    """Joins ratings and articles and writes the split files and the report.

    Args:
      seahorse_dir: folder with `{train,validation,test}.tsv`, or its parent (the unzipped
        SEAHORSE archive, holding `seahorse_data/`).
      article_sources: article files, folders or `hf:` names (see `articles.load_articles`).
      output_dir: where `{split}.jsonl` and `prepare_report.json` are written.
      strict: raise `DataError` on the first unusable row instead of dropping it.
      log: receives one progress line per split and a final summary (None: silent).

    Returns:
      The report written to `prepare_report.json`.

    Raises:
      UserError: missing inputs, an output folder that cannot be written;
      DataError: malformed files, or any drop when strict.
    """
    if not article_sources:
        raise errors.UserError(
            "no article source given (articles: a GEM Parquet export or JSON Lines file)"
        )
    fileio.check_output_path(output_dir, "directory", flag="--output_dir")
    split_files = find_split_files(seahorse_dir)
    read = {split: readers.read_ratings(path, strict) for split, path in split_files.items()}
    wanted = {r.gem_id for f in read.values() for r in f.ratings}
    texts, source_reports = articles.load_articles(article_sources, wanted, strict)
    report: dict = {
        "seahorse_dir": os.path.abspath(seahorse_dir),
        "output_dir": os.path.abspath(output_dir),
        "strict": strict,
        "article_sources": [vars(s) for s in source_reports],
        "splits": {},
    }
    kept: dict[str, list[dict]] = {}
    all_drops: list[readers.Drop] = []
    for split, ratings_file in read.items():
        records, drops = _join_articles(ratings_file, texts, strict)
        kept[split] = records
        all_drops.extend(drops)
        output = os.path.join(output_dir, f"{split}.jsonl")
        report["splits"][split] = _split_report(ratings_file, records, drops, output)
    split_reports = report["splits"].values()
    report["totals"] = {
        key: sum(s[key] for s in split_reports)
        for key in ("rows_read", "rows_kept", "rows_dropped")
    }
    if not report["totals"]["rows_kept"]:
        # Empty split files would only move the failure to `train` or `baselines`.
        raise errors.UserError(_nothing_kept(seahorse_dir, report, all_drops, source_reports))
    _write_outputs(report, kept, output_dir, log)
    return report


def _join_articles(
    ratings_file: readers.RatingsFile, texts: Mapping[str, str], strict: bool
) -> tuple[list[dict], list[readers.Drop]]:
    """The split's joined records, and its drops (the reader's and the rows without an
    article) in line order.

    Raises:
      DataError: a rating has no article and `strict` is set.
    """
    drops = list(ratings_file.drops)
    records = []
    for rating in ratings_file.ratings:
        article = texts.get(rating.gem_id)
        if article is None:
            missing = readers.Drop(
                rating.path,
                rating.line,
                readers.MISSING_ARTICLE,
                "gem_id",
                f"no article for {rating.gem_id!r} in the article sources",
            )
            if strict:
                raise missing.as_error()
            drops.append(missing)
            continue
        records.append(_joined_record(rating, article))
    return records, sorted(drops, key=lambda d: d.line)


def _split_report(
    ratings_file: readers.RatingsFile,
    records: list[dict],
    drops: list[readers.Drop],
    output: str,
) -> dict:
    """One split's entry in the report: counts, drops by reason with examples, label counts."""
    by_reason = collections.Counter(d.reason for d in drops)
    examples: dict[str, list[dict]] = collections.defaultdict(list)
    for d in drops:
        if len(examples[d.reason]) < MAX_DROP_EXAMPLES:
            examples[d.reason].append(d.as_dict())
    split_report = {
        "input": ratings_file.path,
        "output": output,
        "rows_read": ratings_file.rows_read,
        "rows_kept": len(records),
        "rows_dropped": len(drops),
        "dropped_by_reason": {r: by_reason[r] for r in readers.DROP_REASONS},
        "drop_examples": dict(examples),
        "q1_no_blanked": ratings_file.q1_no_blanked,
        "labels": _label_counts(records),
        "languages": dict(sorted(collections.Counter(r["language"] for r in records).items())),
        "datasets": dict(sorted(collections.Counter(r["dataset"] for r in records).items())),
    }
    # The accounting every consumer relies on: nothing is lost silently.
    assert split_report["rows_kept"] + split_report["rows_dropped"] == ratings_file.rows_read
    return split_report


def _write_outputs(
    report: dict,
    kept: Mapping[str, list[dict]],
    output_dir: str,
    log: Callable[[str], None] | None,
) -> None:
    """Writes the split files, then `prepare_report.json`, logging a line for each."""
    for split, records in kept.items():
        split_report = report["splits"][split]
        _write_jsonl(split_report["output"], records)
        if log:
            log(_split_line(split, split_report, split_report["output"]))
    report_path = os.path.join(output_dir, REPORT_NAME)
    fileio.atomic_write_text(report_path, json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    if log:
        totals = report["totals"]
        log(
            f"prepared {totals['rows_kept']} of {totals['rows_read']} rows "
            f"({totals['rows_dropped']} dropped) into {output_dir} (report: {report_path})"
        )
