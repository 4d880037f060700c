"""`import-scores --external` with a file of which no row is usable, for every benchmark
reader: the error names the counts and the first rows at fault (file:line, field, what was
expected), and nothing is written."""

from __future__ import annotations

import json
import pathlib

import pytest

from seahorse_t5x import cli, constants
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.scoring import import_scores

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"
# Each registered benchmark's fixture release (a new benchmark adds its own here).
RELEASES = {
    "aggrefact": DATA / "aggrefact" / "aggre_fact_final.csv",
    "frank": DATA / "frank",
    "llm_aggrefact": DATA / "llm_aggrefact" / "data",
    "metal": DATA / "metal.json",
    "mface": DATA / "mface.csv",
    "summeval": DATA / "summeval" / "model_annotations.aligned.paired.jsonl",
    "true": DATA / "true",
}


def _key(benchmark: str) -> tuple[str, ...]:
    return import_scores.default_key(benchmark)


def _import(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(["import-scores", "--metric", "m", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _located(path: pathlib.Path, line: int, field: str, names: tuple[str, ...], has: str) -> str:
    expected = " or ".join(map(repr, names))
    return (
        f"{path}:{line} field '{field}': no key value: expected a non-empty {expected} "
        f"(the record has: {has})"
    )


def test_every_registered_benchmark_has_a_release_here():
    assert set(RELEASES) == set(registry.names())


@pytest.mark.parametrize("benchmark", sorted(RELEASES))
def test_keys_under_other_names_name_the_first_rows_and_their_field(benchmark, tmp_path, capsys):
    key = _key(benchmark)
    external = tmp_path / "other_names.jsonl"
    rows = [{"ident": f"x{i}", "sys": "s", "score": i / 10} for i in range(17)]
    external.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    output = tmp_path / "out.jsonl"
    argv = ["--external", str(external), "--benchmark", benchmark]
    argv += ["--benchmark_path", str(RELEASES[benchmark]), "--key", ",".join(key)]
    code, stdout, err = _import([*argv, "--output", str(output)], capsys)
    # (Nothing on stdout: TRUE's note on the fixture's absent CSVs comes only with a result.)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "external rows: 17 read, 17 invalid" in err
    names = import_scores.key_aliases(benchmark)[key[0]]
    first = [_located(external, n, key[0], names, "ident, sys, score") for n in (1, 2, 3)]
    assert f"; first invalid: {'; '.join(first)}\n" in err
    assert _located(external, 4, key[0], names, "ident, sys, score") not in err
    assert not output.exists()
    assert not output.with_name("out.join.json").exists()


def test_another_benchmarks_file_names_the_key_the_benchmark_uses(tmp_path, capsys):
    # FRANK's submission format (hash, model_name) given for SummEval (id, model_id).
    external = tmp_path / "frank_submission.json"
    external.write_text(
        json.dumps([{"hash": f"h{i}", "model_name": "bart", "score": 0.5} for i in range(4)]),
        encoding="utf-8",
    )
    argv = ["--external", str(external), "--benchmark", "summeval"]
    argv += ["--benchmark_path", str(RELEASES["summeval"])]
    code, _, err = _import([*argv, "--output", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "external rows: 4 read, 4 invalid" in err
    # A JSON list's rows are located by their 1-based position.
    assert _located(external, 1, "gem_id", ("id", "gem_id"), "hash, model_name, score") in err


def test_scores_that_are_not_numbers_name_the_score_field(tmp_path, capsys):
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    row = {"gem_id": "xsum-test-1", "language": "en", "dataset": "xsum", "system": "t5_base"}
    row |= {"article": "An article.", "summary": "A summary."}
    row |= {f"q{q}": 1 for q in constants.QUESTIONS}
    (prepared / "test.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    external = tmp_path / "ext.csv"
    external.write_text("gem_id,system,value\nxsum-test-1,t5_base,n/a\nxsum-test-2,t5_base,\n")
    argv = ["--external", str(external), "--benchmark", "seahorse", "--data_dir", str(prepared)]
    argv += ["--questions", "4", "--score_field", "value", "--output", str(tmp_path / "o.jsonl")]
    code, _, err = _import(argv, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "external rows: 2 read, 2 invalid" in err
    assert (
        f"; first invalid: {external}:2 field 'value': expected a finite number, got 'n/a'; "
        f"{external}:3 field 'value': expected a finite number, got ''\n"
    ) in err


def test_rows_that_match_nothing_are_named_when_nothing_matched(tmp_path, capsys):
    # Valid rows of another benchmark (mFACE ids for METAL): counted unmatched and shown.
    external = tmp_path / "ext.jsonl"
    rows = [{"gem_id": f"other-{i}", "system": "s", "score": 0.5} for i in range(4)]
    external.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["--external", str(external), "--benchmark", "metal"]
    argv += ["--benchmark_path", str(RELEASES["metal"]), "--output", str(tmp_path / "o.jsonl")]
    code, _, err = _import(argv, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "external rows: 4 read, 0 invalid, 0 in 0 duplicated keys, 4 unmatched" in err
    assert "; first unmatched: other-0 | s; other-1 | s; other-2 | s\n" in err
    assert "first invalid" not in err
