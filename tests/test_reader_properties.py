"""Property tests of the readers: random valid rows mixed with random corruptions.

For the SEAHORSE TSV, the article JSON Lines and the TRUE CSV: every input row is either
kept or counted as dropped, exactly once, whatever the mix (a byte-order mark included),
and nothing but the project's own error types is ever raised.
"""

import csv
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seahorse_t5x import constants, errors
from seahorse_t5x.data import articles, benchmarks, readers

# derandomize: the same examples on every run, so a failure is reproducible in CI.
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

# Text without the separators of the formats (tabs and newlines end TSV fields and rows).
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r"),
    max_size=30,
)
_GEM_IDS = st.sampled_from(
    [
        "xsum-test-{}",
        "xlsum_russian-validation-{}",
        "mlsum_de-test-{}",
        "wiki_lingua_spanish_es-val-{}",
        "GEM-xsum-test-{}",
    ]
)
_RATING = st.sampled_from(["Yes", "No", "Unsure", "", "yes", "NaN"])


def _read(data: bytes, suffix: str, read):
    """`read(path)` of a temporary file holding `data`, with its path: (path, result)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        try:
            return str(path), read(str(path))
        except errors.UserError as e:
            return str(path), e


# ------------------------------------------------------------------------ SEAHORSE TSV


@st.composite
def _tsv_row(draw, number: int) -> bytes:
    fields = [
        draw(_GEM_IDS).format(number),
        draw(st.sampled_from(["de", "en-US", "es-ES", "ru", "tr", "vi"])),
        draw(_TEXT) or "a summary",
        draw(st.sampled_from(["t5_base", "mt5_xxl", "reference"])),
        *[draw(_RATING) for _ in range(6)],
    ]
    kind = draw(
        st.sampled_from(
            ["valid"] * 4
            + ["few_fields", "many_fields", "bad_utf8", "bad_label", "no_id", "bad_id", "empty"]
            + ["garbage"]
        )
    )
    if kind == "few_fields":
        fields = fields[:5]
    elif kind == "many_fields":
        fields = [*fields, "extra"]
    elif kind == "bad_label":
        fields[4 + draw(st.integers(0, 5))] = "Maybe"
    elif kind == "no_id":
        fields[0] = draw(st.sampled_from(["", "nan", "None"]))
    elif kind == "bad_id":
        fields[0] = "cnn_dailymail-test-1"
    elif kind == "empty":
        fields[2] = " "
    line = "\t".join(fields).encode("utf-8")
    if kind == "bad_utf8":
        position = draw(st.integers(0, len(line)))
        line = (
            line[:position] + draw(st.sampled_from([b"\xff", b"\xc3(", b"\x80"])) + line[position:]
        )
    elif kind == "garbage":
        # Never a blank line (blank lines are not rows): a byte, then any bytes but line ends.
        line = b"x" + draw(st.binary(max_size=40)).replace(b"\n", b" ").replace(b"\r", b" ")
    return line


@st.composite
def _tsv_file(draw) -> tuple[bytes, int]:
    count = draw(st.integers(1, 25))  # empty files: tests/test_empty_inputs.py
    lines = [draw(_tsv_row(i)) for i in range(count)]
    # A copy of an earlier row (a duplicate) now and then.
    if lines and draw(st.booleans()):
        lines.append(lines[draw(st.integers(0, len(lines) - 1))])
    header = "\t".join(constants.TSV_COLUMNS).encode()
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    body = ending.join([header, *lines]) + (ending if draw(st.booleans()) else b"")
    return bom + body, len(lines)


@SETTINGS
@given(_tsv_file())
def test_tsv_every_row_is_kept_or_dropped_once(generated):
    data, count = generated
    _, result = _read(data, ".tsv", readers.read_ratings)
    assert result.rows_read == count
    kept = [r.line for r in result.ratings]
    dropped = [d.line for d in result.drops]
    assert sorted(kept + dropped) == list(range(2, count + 2))
    assert all(d.reason in readers.DROP_REASONS for d in result.drops)


@SETTINGS
@given(_tsv_file())
def test_tsv_strict_raises_only_data_errors(generated):
    data, count = generated
    path, result = _read(data, ".tsv", lambda p: readers.read_ratings(p, strict=True))
    if isinstance(result, errors.UserError):
        assert isinstance(result, errors.DataError)
        assert result.path == path and 1 <= result.line <= count + 1
    else:
        assert len(result.ratings) == count and not result.drops


# ------------------------------------------------------------------ article JSON Lines


@st.composite
def _jsonl_line(draw, number: int) -> bytes:
    gem_id = f"xsum-test-{draw(st.integers(0, 8))}"  # repeats: duplicates and conflicts
    text = draw(_TEXT)
    kind = draw(
        st.sampled_from(
            ["valid"] * 4
            + ["bad_json", "array", "no_id", "empty_id", "number", "object", "mixed_list"]
            + ["sentences", "bad_utf8", "other_field"]
        )
    )
    record: object = {"gem_id": gem_id, "article": text}
    if kind == "bad_json":
        return b'{"gem_id": "' + gem_id.encode() + b'", "article": '
    if kind == "array":
        record = [gem_id, text]
    elif kind == "no_id":
        record = {"article": text}
    elif kind == "empty_id":
        record = {"gem_id": " ", "article": text}
    elif kind == "number":
        record = {"gem_id": gem_id, "article": draw(st.integers() | st.floats(allow_nan=False))}
    elif kind == "object":
        record = {"gem_id": gem_id, "article": {"text": text}}
    elif kind == "mixed_list":
        record = {"gem_id": gem_id, "article": [text, 3]}
    elif kind == "sentences":
        record = {"gem_id": gem_id, "article": [text, "Second sentence."]}
    elif kind == "other_field":
        record = {"gem_id": gem_id, "document": text}
    line = json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8")
    if kind == "bad_utf8":
        line = line[:-1] + b"\xff" + line[-1:]
    return line


@st.composite
def _jsonl_file(draw) -> tuple[bytes, int]:
    # Empty files: tests/test_empty_inputs.py.
    lines = [draw(_jsonl_line(i)) for i in range(draw(st.integers(1, 25)))]
    blanks = draw(st.integers(0, 2))
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + b"\n".join(lines + [b""] * blanks) + b"\n", len(lines)


@SETTINGS
@given(_jsonl_file())
def test_jsonl_every_record_is_kept_or_counted_once(generated):
    data, count = generated
    _, (texts, (report,)) = _read(data, ".jsonl", lambda p: articles.load_articles([p]))
    accounted = (
        report.articles_added
        + report.skipped_empty
        + report.conflicts
        + report.duplicates
        + report.bad_records
    )
    assert accounted == count
    assert report.articles_added == len(texts)
    assert all(isinstance(t, str) and t.strip() for t in texts.values())


@SETTINGS
@given(_jsonl_file())
def test_jsonl_strict_raises_only_project_errors(generated):
    data, count = generated
    path, result = _read(data, ".jsonl", lambda p: articles.load_articles([p], strict=True))
    if isinstance(result, errors.UserError):
        assert isinstance(result, errors.DataError)
        assert result.path == path and 1 <= result.line <= count


# ------------------------------------------------------------------------- TRUE CSV


@st.composite
def _csv_file(draw) -> tuple[bytes, int]:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["", "grounding", "generated_text", "label"])
    count = draw(st.integers(1, 20))  # empty files: tests/test_empty_inputs.py
    for index in range(count):
        # Quoted commas, quotes and newlines inside fields are valid CSV.
        text = st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
            max_size=20,
        )
        row = [str(index), draw(text) + "x", draw(text) + "y", draw(st.sampled_from(["0", "1"]))]
        kind = draw(st.sampled_from(["valid"] * 4 + ["bad_label", "no_grounding", "short", "long"]))
        if kind == "bad_label":
            row[3] = draw(st.sampled_from(["2", "yes", "", "0.5"]))
        elif kind == "no_grounding":
            row[1] = " "
        elif kind == "short":
            row = row[:3]
        elif kind == "long":
            row = [*row, "extra"]
        writer.writerow(row)
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + out.getvalue().encode("utf-8"), count


@SETTINGS
@given(_csv_file())
def test_csv_every_row_is_kept_or_dropped_once(generated):
    data, count = generated
    with tempfile.TemporaryDirectory() as folder:
        name = benchmarks.TRUE_DATASETS["frank"][0]
        (Path(folder) / name).write_bytes(data)
        result = benchmarks.read_true("frank", folder)
    assert len(result.examples) + len(result.dropped) == count
    kept = {e["gem_id"] for e in result.examples}
    assert len(kept) == len(result.examples)  # each row kept at most once
    assert all(e["label"] in (0, 1) for e in result.examples)
