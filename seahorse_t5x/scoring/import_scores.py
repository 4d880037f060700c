"""External metrics' per-example output -> score files, joined with a benchmark's labels.

Any metric that writes one score per item (TIGERScore's JSON results, a CSV or JSON Lines
file from any scorer) becomes a per-example score file for `report`, so it sits in the same
tables, with the same intervals and paired tests, as the learnt metrics.

The join is by a key the user names (`gem_id`, `gem_id,system`, `article,summary`, ...),
by default the benchmark's natural key (`registry.Benchmark.key`: SummEval's `id` +
`model_id`, FRANK's `hash` + `model_name`, AggreFact's `dataset` + `id` + `model_name`,
LLM-AggreFact's `dataset` + `doc` + `claim`, TRUE's `gem_id` `true_<dataset>-<row index>`),
under the names its released files use.
Nothing is guessed: an external row without a usable key or score is counted as invalid,
an external key given twice is counted as duplicated and none of its rows is used, an
external key that no benchmark item has is counted as unmatched, a key that several items of
one question share is counted as ambiguous, and a benchmark item without a score is counted
as unscored. `JoinReport` holds the counts and the first few keys of each kind.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import pathlib
import unicodedata
from collections.abc import Iterator, Mapping, Sequence

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data import benchmarks, scorefiles, splits
from seahorse_t5x.data.benchmarks import registry

KEY_FIELDS: tuple[str, ...] = ("gem_id", "system", "article", "summary", "dataset")
# Names the external files may use for the key fields (TIGERScore's inputs are
# `input_context` and `hypo_output`).
KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "gem_id": ("gem_id", "id"),
    "system": ("system", "model"),
    "article": ("article", "input_context", "source", "premise", "document"),
    "summary": ("summary", "hypo_output", "hypothesis", "generated_text"),
    "dataset": ("dataset",),
}


def key_aliases(benchmark: str) -> dict[str, tuple[str, ...]]:
    """`KEY_ALIASES` with the benchmark's own names for its key fields first (FRANK's
    `hash` for `gem_id`)."""
    found = registry.find(benchmark)
    own = found.key_aliases if found is not None else {}
    return {
        field: (*own.get(field, ()), *(a for a in names if a not in own.get(field, ())))
        for field, names in KEY_ALIASES.items()
    }


def default_key(benchmark: str) -> tuple[str, ...]:
    """The benchmark's natural key; `gem_id,system` for SEAHORSE."""
    found = registry.find(benchmark)
    return found.key if found is not None else ("gem_id", "system")


# How many example keys a report keeps per problem.
EXAMPLES_KEPT = 5


def normalize_key_value(field: str, value: object) -> str | None:
    """The comparable form of a key value: texts NFC with whitespace collapsed, ids stripped
    (and a GEM- prefix dropped); None for a missing or empty value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = unicodedata.normalize("NFC", str(value))
    text = " ".join(text.split())
    if field == "gem_id":
        text = text.removeprefix("GEM-")
    return text or None


def parse_key(text: str) -> tuple[str, ...]:
    """`"gem_id,system"` -> ("gem_id", "system").

    Raises:
      UserError: an empty key, a repeated field or one not in `KEY_FIELDS`.
    """
    fields = tuple(f.strip() for f in text.split(",") if f.strip())
    if not fields or len(set(fields)) != len(fields) or any(f not in KEY_FIELDS for f in fields):
        raise errors.UserError(
            f"--key must be comma-separated fields from {', '.join(KEY_FIELDS)}, got {text!r}"
        )
    return fields


# ----------------------------------------------------------------------------- external rows


def _expected(required: Mapping[str, Sequence[str]]) -> str:
    """What an external file holds, for the message when it is empty."""
    return f"one record per line or item with the fields {', '.join(required)}"


def _check_header(
    path: pathlib.Path, columns: Sequence[str] | None, required: Mapping[str, Sequence[str]]
) -> None:
    """A CSV/TSV header must name each required column (under one of its names).

    Raises:
      DataError: at line 1, naming the missing column and the columns found.
    """
    if not columns or not "".join(columns).strip():
        raise fileio.empty_file_error(path, _expected(required))
    for name, aliases in required.items():
        if not any(a in columns for a in aliases):
            also = f" (or {', '.join(a for a in aliases if a != name)})" if len(aliases) > 1 else ""
            raise errors.DataError(
                str(path),
                1,
                None,
                f"missing column {name!r}{also} (columns found: {', '.join(columns)}; "
                "--key and --score_field name the columns used)",
            )


def _external_records(
    path: pathlib.Path, required: Mapping[str, Sequence[str]]
) -> Iterator[tuple[int | None, dict]]:
    """(line or position, record) for each item of a JSON, JSON Lines, CSV or TSV file.

    `required` maps each column a CSV/TSV header must hold to the names it may have.
    """
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        # TSV fields are split on tabs only (a summary may start with a quote), CSV fields
        # are quoted as usual: `fileio.open_table`, as every reader of tables.
        with fileio.open_table(path) as table:
            _check_header(path, table.header, required)
            for row in table:
                yield row.line, row.values
        return
    if suffix == ".jsonl":
        yield from fileio.iter_json_objects(path)
        return
    if suffix != ".json":
        raise errors.UserError(
            f"{path}: expected a .json (list of objects, or an object keyed by id), .jsonl, "
            ".csv or .tsv file"
        )
    data = fileio.read_json(path, _expected(required))
    if isinstance(data, list):
        # JSON arrays have no useful line numbers: items are located by 1-based position.
        yield from enumerate(data, start=1)
    elif isinstance(data, dict):
        for key, record in data.items():
            if isinstance(record, dict):
                record = {"gem_id": key, **record}
            yield None, record
    else:
        raise errors.DataError(str(path), None, None, "expected a JSON list or object")


def _field(
    record: Mapping, field: str, aliases: Mapping[str, Sequence[str]] = KEY_ALIASES
) -> object:
    for name in aliases[field]:
        if name in record:
            return record[name]
    return None


def _score_value(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


@dataclasses.dataclass
class ExternalScores:
    """The usable rows of an external file: key -> [(where, score)], and its invalid rows."""

    path: str
    by_key: dict[tuple[str, ...], list[tuple[str, float]]]
    invalid: list[errors.DataError]
    rows: int


def read_external_scores(
    path: str | pathlib.Path,
    key: Sequence[str],
    score_field: str = "score",
    aliases: Mapping[str, Sequence[str]] = KEY_ALIASES,
) -> ExternalScores:
    """Reads an external metric's file into scores keyed by `key` (each key field found
    under the first of its `aliases` a record has; `key_aliases(benchmark)`).

    Raises:
      UserError: the file is missing or of an unknown kind; DataError: the file is empty
        (no record), or a CSV/TSV header without a key or score column.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise errors.UserError(f"scores file not found: {p}")
    by_key: dict[tuple[str, ...], list[tuple[str, float]]] = collections.defaultdict(list)
    invalid: list[errors.DataError] = []
    rows = 0
    required = {aliases[f][0]: aliases[f] for f in key}
    required[score_field] = (score_field,)
    for where, record in _external_records(p, required):
        rows += 1
        location = f"{p}:{where}" if where is not None else str(p)
        if not isinstance(record, Mapping):
            invalid.append(errors.DataError(str(p), where, None, "expected an object"))
            continue
        values = tuple(normalize_key_value(f, _field(record, f, aliases)) for f in key)
        missing = [f for f, v in zip(key, values, strict=True) if v is None]
        if missing:
            names = " or ".join(repr(a) for a in aliases[missing[0]])
            fields = ", ".join(map(str, list(record)[:8])) + (", ..." if len(record) > 8 else "")
            invalid.append(
                errors.DataError(
                    str(p),
                    where,
                    missing[0],
                    f"no key value: expected a non-empty {names} (the record has: "
                    f"{fields or 'no fields'})",
                )
            )
            continue
        score = _score_value(record.get(score_field))
        if score is None:
            invalid.append(
                errors.DataError(
                    str(p),
                    where,
                    score_field,
                    f"expected a finite number, got {record.get(score_field)!r}",
                )
            )
            continue
        by_key[values].append((location, score))
    if not rows:
        table = p.suffix.lower() in (".csv", ".tsv")
        raise fileio.empty_file_error(p, _expected(required), header_only=table)
    return ExternalScores(str(p), dict(by_key), invalid, rows)


# ----------------------------------------------------------------------------- benchmark items


def _item(
    example: Mapping, question: object, label: object, row_fields: Sequence[str] = ()
) -> dict:
    item = {
        "question": question,
        "label": label,
        "article": example.get("article", example.get("premise")),
        "summary": example.get("summary", example.get("hypothesis")),
    }
    for name in constants.SLICE_FIELDS:
        if example.get(name) is not None:
            item[name] = example[name]
    if "label_binary" in example:
        item["label_binary"] = example["label_binary"]
    for name in row_fields:
        if example.get(name) not in (None, ""):
            item[name] = example[name]
    return item


def seahorse_items(
    data_dir: str | pathlib.Path, split: str, questions: Sequence[int] = constants.QUESTIONS
) -> list[dict]:
    """One item per (row of `{data_dir}/{split}.jsonl`, question it has a label for)."""
    rows = splits.read_rows(splits.split_path(data_dir, split))
    return [
        _item(row, q, int(row[f"q{q}"]))
        for q in questions
        for row in rows
        if row.get(f"q{q}") is not None
    ]


def benchmark_items(
    benchmark: str,
    *,
    data_dir: str | None = None,
    split: str = "test",
    questions: Sequence[int] = constants.QUESTIONS,
    path: str | None = None,
    xlsum_articles: str | None = None,
    options: Mapping[str, object] | None = None,
) -> tuple[list[dict], list[errors.DataError], list[str]]:
    """The labelled items of `benchmark` that external scores are joined to.

    Args:
      benchmark: `seahorse` (prepared split file) or a registered benchmark.
      data_dir, split, questions: for `seahorse`.
      path: the benchmark's file or folder (None: its environment variable, see
        `data.benchmarks`).
      xlsum_articles: METAL only, when the key needs `article`.
      options: the benchmark reader's options (SummEval's `articles`).

    Returns:
      (items, rows the benchmark's reader dropped, its notes on the release as a whole:
      `ReadResult.notes`, e.g. TRUE's CSVs absent from the folder).
    """
    if benchmark == constants.SEAHORSE_BENCHMARK:
        if data_dir is None:
            raise errors.UserError("--data_dir (the `prepare` output) is needed for seahorse")
        return seahorse_items(data_dir, split, questions), [], []
    declared = registry.get(benchmark)
    given = {"xlsum_articles": xlsum_articles, **(options or {})}
    options = {k: v for k, v in given.items() if k in declared.options and v is not None}
    if "labels_only" in declared.options:
        # Without the articles it reads apart (METAL's), its labels alone: enough to join
        # on gem_id.
        options["labels_only"] = not any(options.values())
    results = declared.read_all(path, **options)
    items = [
        _item(e, e["question"], e["label"], declared.row_fields)
        for r in results
        for e in r.examples
    ]
    return items, [d for r in results for d in r.dropped], [n for r in results for n in r.notes]


# ----------------------------------------------------------------------------- the join


@dataclasses.dataclass
class JoinReport:
    """What the join did, counted; `examples` holds a few keys (or rows) of each problem."""

    external_rows: int = 0
    invalid_rows: int = 0
    duplicated_keys: int = 0
    duplicated_rows: int = 0
    unmatched_rows: int = 0
    benchmark_items: int = 0
    benchmark_dropped: int = 0
    ambiguous_items: int = 0
    unscored_items: int = 0
    matched_items: int = 0
    examples: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # The benchmark reader's notes on its release (`ReadResult.notes`).
    benchmark_notes: list[str] = dataclasses.field(default_factory=list)

    def note(self, kind: str, text: str) -> None:
        kept = self.examples.setdefault(kind, [])
        if len(kept) < EXAMPLES_KEPT:
            kept.append(text)

    def summary(self) -> str:
        """One line with every count."""
        return (
            f"{self.matched_items} of {self.benchmark_items} benchmark items scored; external "
            f"rows: {self.external_rows} read, {self.invalid_rows} invalid, "
            f"{self.duplicated_rows} in {self.duplicated_keys} duplicated keys, "
            f"{self.unmatched_rows} unmatched; benchmark items: {self.ambiguous_items} "
            f"ambiguous, {self.unscored_items} unscored, {self.benchmark_dropped} dropped by "
            "the benchmark reader"
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _show(key: tuple[str, ...]) -> str:
    return " | ".join(v if len(v) <= 60 else v[:57] + "..." for v in key)


def _usable_scores(external: ExternalScores, report: JoinReport) -> dict[tuple[str, ...], float]:
    """The external score of each key given once; the keys given more often are counted and
    noted in `report` as duplicated."""
    usable: dict[tuple[str, ...], float] = {}
    for k, found in external.by_key.items():
        if len(found) > 1:
            report.duplicated_keys += 1
            report.duplicated_rows += len(found)
            report.note("duplicated", f"{_show(k)} at {', '.join(w for w, _ in found[:3])}")
        else:
            usable[k] = found[0][1]
    return usable


def _item_keys(
    items: Sequence[Mapping], key: Sequence[str], benchmark: str
) -> list[tuple[str, ...]]:
    """Each benchmark item's values of the join fields, normalized as the external rows'.

    Raises:
      UserError: an item lacks a join field (naming the benchmark's natural key when the
        join is on another).
    """
    item_keys: list[tuple[str, ...]] = []
    for item in items:
        values = tuple(normalize_key_value(f, item.get(f)) for f in key)
        if any(v is None for v in values):
            missing = [f for f, v in zip(key, values, strict=True) if v is None][0]
            natural = ",".join(default_key(benchmark))
            hint = ""
            if missing == "article":
                hint = " (give --xlsum_articles for METAL's articles)"
            elif missing not in default_key(benchmark):
                hint = f" (its natural key is {natural}: pass --key {natural}, or leave --key out)"
            raise errors.UserError(f"{benchmark} items have no {missing!r} to join on{hint}")
        item_keys.append(values)
    return item_keys


def join_scores(
    external: ExternalScores,
    items: Sequence[Mapping],
    key: Sequence[str],
    metric: str,
    benchmark: str,
    negate: bool = False,
) -> tuple[list[dict], JoinReport]:
    """Score-file rows for the benchmark items whose key has exactly one external score.

    Args:
      external: from `read_external_scores` with the same `key`.
      items: from `benchmark_items`.
      key: the join fields.
      metric: the rows' `metric`.
      benchmark: the rows' `benchmark`.
      negate: the metric's lower values are better (rows get `-score`).

    Returns:
      (rows in the items' order, the report).

    Raises:
      UserError: the benchmark items lack a key field (e.g. `article` without articles), or
        nothing matched.
    """
    report = JoinReport(external_rows=external.rows, invalid_rows=len(external.invalid))
    for problem in external.invalid:
        report.note("invalid", str(problem))
    usable = _usable_scores(external, report)
    report.benchmark_items = len(items)
    item_keys = _item_keys(items, key, benchmark)
    by_question: dict[tuple[object, tuple[str, ...]], list[int]] = collections.defaultdict(list)
    for index, (item, values) in enumerate(zip(items, item_keys, strict=True)):
        by_question[(item["question"], values)].append(index)
    benchmark_keys = set(item_keys)

    # A duplicated key is counted as duplicated only, whether or not it would match.
    for k in usable:
        if k not in benchmark_keys:
            report.unmatched_rows += 1
            report.note("unmatched", _show(k))

    rows: list[dict] = []
    for index, item in enumerate(items):
        k = item_keys[index]
        if len(by_question[(item["question"], k)]) > 1:
            report.ambiguous_items += 1
            report.note("ambiguous", f"question {item['question']}: {_show(k)}")
            continue
        if k not in usable:
            report.unscored_items += 1
            report.note("unscored", f"question {item['question']}: {_show(k)}")
            continue
        rows.append(
            scorefiles.score_row(
                metric=metric,
                benchmark=benchmark,
                question=item["question"],
                label=item["label"],
                score=-usable[k] if negate else usable[k],
                slices=item,
                extra={n: item[n] for n in item if n in ("label_binary", "split", "origin")},
            )
        )
    report.matched_items = len(rows)
    if not rows:
        raise errors.UserError(
            f"no {benchmark} item matched a score of {external.path} on key "
            f"{','.join(key)}: {report.summary()}{first_problems(report)}"
        )
    return rows, report


# The external rows' problems a failed join names, in this order, and how many of each.
PROBLEM_KINDS: tuple[str, ...] = ("invalid", "duplicated", "unmatched")
PROBLEMS_SHOWN = 3


def first_problems(report: JoinReport) -> str:
    """`; first invalid: FILE:LINE field 'F': ...; ...`: the first external rows of each
    problem kind (`PROBLEM_KINDS`, `PROBLEMS_SHOWN` each), for a join of which nothing
    matched; "" when no external row had a problem."""
    parts = [
        f"first {kind}: {'; '.join(report.examples[kind][:PROBLEMS_SHOWN])}"
        for kind in PROBLEM_KINDS
        if report.examples.get(kind)
    ]
    return "".join(f"; {part}" for part in parts)


# ----------------------------------------------------------------------------- METAL's LLM scores


def metal_llm_scores(path: str | None) -> benchmarks.ReadResult:
    """METAL's own LLM scores as score rows (`benchmarks.read_metal_llm_scores`).

    Raises:
      UserError: the reader's errors, and a file of which no score row was kept (its record
        count, drop count and most frequent drop reasons, by top-level field).
    """
    result = benchmarks.read_metal_llm_scores(path)
    if result.examples:
        return result
    # Nothing kept, so every record read was dropped: each drop is located `FILE[key]`.
    records = len({d.path for d in result.dropped})
    by_field = collections.Counter((d.field or "record").split(".")[0] for d in result.dropped)
    reasons = ", ".join(f"{field} {count}" for field, count in by_field.most_common(3))
    found = (
        f"{records} records read, all dropped ({len(result.dropped)} drops by field: {reasons}; "
        f"first: {result.dropped[0]})"
        if records
        else "the file holds no records"
    )
    raise errors.UserError(
        f"{result.path}: no METAL LLM score kept: {found} (expected records with Language, "
        f"Human_Scores, Generated_Summary and {'/'.join(benchmarks.METAL_LLM_PROMPTS.values())}; "
        "nothing was written)"
    )
