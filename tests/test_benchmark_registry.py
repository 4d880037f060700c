"""The benchmark registry: every benchmark declared once, the older flags and `--benchmark`
giving the same score files, and mFACE/TRUE/METAL read exactly as before the registry
(golden files written by the readers and `baselines` before they moved onto it; ROUGE-L
tokenizes with the demo vocabulary, so the `rouge_l.*` files follow the shipped one)."""

import argparse
import json
import pathlib

import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data import benchmarks
from seahorse_t5x.data.benchmarks import registry

ROOT = pathlib.Path(__file__).parent.parent
DATA = pathlib.Path("tests/testdata/benchmarks")
GOLDEN = ROOT / DATA / "golden"


def test_every_benchmark_module_is_registered_with_a_consistent_declaration():
    # A new module declaring BENCHMARK joins these without any other edit.
    assert set(registry.names()) >= {
        "aggrefact",
        "frank",
        "llm_aggrefact",
        "metal",
        "mface",
        "summeval",
        "true",
    }
    assert registry.names() == sorted(registry.names())
    for name in registry.names():
        benchmark = registry.get(name)
        assert benchmark.name == name
        assert set(benchmark.questions) == set(benchmark.dimensions)
        assert benchmark.label_kind in (registry.LABEL_BINARY, registry.LABEL_GRADED)


def test_unknown_benchmark_lists_the_registered_ones():
    with pytest.raises(
        errors.UserError, match="unknown benchmark 'nope': expected one of aggrefact"
    ):
        registry.get("nope")


def test_missing_path_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv("SEAHORSE_FRANK_DIR", raising=False)
    with pytest.raises(errors.UserError, match="SEAHORSE_FRANK_DIR.*artidoro/frank"):
        registry.get("frank").read_all(None)


def _dump(result):
    return [result.examples, [str(d) for d in result.dropped]]


def test_mface_true_metal_readers_give_what_they_gave_before_the_registry(monkeypatch):
    monkeypatch.chdir(ROOT)
    golden = json.loads((GOLDEN / "readers.json").read_text())
    now = {}
    for dimension, result in zip(
        benchmarks.MFACE_DIMENSIONS,
        registry.get("mface").read_all(DATA / "mface.csv"),
        strict=True,
    ):
        now[f"mface/{dimension}"] = _dump(result)
    for result in registry.get("true").read_all(DATA / "true"):
        now[f"true/{pathlib.Path(result.path).name.split('_')[0]}"] = _dump(result)
    metal = registry.get("metal")
    articles = str(DATA / "xlsum_articles.jsonl")
    for metric, joined, labels in zip(
        benchmarks.METAL_METRICS,
        metal.read_all(DATA / "metal.json", xlsum_articles=articles),
        metal.read_all(DATA / "metal.json", labels_only=True),
        strict=True,
    ):
        now[f"metal/{metric}"] = _dump(joined)
        now[f"metal_labels/{metric}"] = _dump(labels)
    assert json.loads(json.dumps(now, sort_keys=True)) == golden


@pytest.mark.parametrize("spelling", ["old", "registry"])
def test_baselines_score_files_are_byte_identical_to_before(
    tmp_path, monkeypatch, capsys, spelling
):
    monkeypatch.chdir(ROOT)
    given = {"mface": "mface.csv", "true": "true", "metal": "metal.json"}
    if spelling == "old":
        flags = ["--mface", "--true_dir", "--metal"]
        args = [
            x
            for flag, path in zip(flags, given.values(), strict=True)
            for x in (flag, str(DATA / path))
        ]
    else:
        args = []
        for name, path in given.items():
            args += ["--benchmark", name, "--benchmark_path", str(DATA / path)]
    code = cli.main(
        [
            "baselines",
            "--output_dir",
            str(tmp_path / "out"),
            "--vocab",
            "demo",
            "--baselines",
            "rouge_l",
            "--xlsum_articles",
            str(DATA / "xlsum_articles.jsonl"),
            *args,
        ]
    )
    assert code == 0
    for name in given:
        written = (tmp_path / "out" / f"rouge_l.{name}.jsonl").read_bytes()
        assert written == (GOLDEN / f"rouge_l.{name}.jsonl").read_bytes(), name
    # The older flags are deprecated: one note each, and hidden from --help.
    notes = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    if spelling == "old":
        assert notes == [
            f"seahorse-t5x baselines: note: {flag} is deprecated; use --benchmark {name} "
            "--benchmark_path PATH"
            for flag, name in zip(flags, given, strict=True)
        ]
    else:
        assert notes == []
    parser = cli.build_parser("baselines")
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    shown = subparsers.choices["baselines"].format_help()
    assert "--benchmark_path" in shown
    assert all(f"{flag} " not in shown for flag in ("--mface", "--true_dir", "--metal"))


def test_benchmark_path_count_must_match(tmp_path, capsys):
    code = cli.main(
        [
            "baselines",
            "--output_dir",
            str(tmp_path / "o"),
            "--vocab",
            "demo",
            "--benchmark",
            "frank",
            "--benchmark",
            "summeval",
            "--benchmark_path",
            "x",
        ]
    )
    assert code != 0
    assert "--benchmark_path given 1 times for 2 --benchmark" in capsys.readouterr().err


def test_gin_binds_any_registered_benchmarks_path():
    import gin

    from seahorse_t5x.data.benchmarks import common

    with gin.unlock_config():
        gin.bind_parameter("seahorse_t5x.data.benchmarks.benchmark_paths.frank", "/data/frank")
    try:
        assert common.benchmark_paths()["frank"] == "/data/frank"
        assert registry.get("frank").path() == "/data/frank"
        assert registry.get("frank").path("/elsewhere") == "/elsewhere"  # the argument wins
    finally:
        gin.clear_config()
