"""Every registered benchmark's reader takes the release's checkout root (its files under
`data/`), that data folder, or the file itself, and reads the same examples from each."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data.benchmarks import common, registry

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"
ARTICLES = str(DATA / "xlsum_articles.jsonl")

# name -> (fixture file -> its name in the release's data/, the file given as "the file
# itself", the reader's options).
RELEASES: dict[str, tuple[dict[str, str], str, dict]] = {
    "aggrefact": ({"aggrefact/aggre_fact_final.csv": "aggre_fact_final.csv"}, "", {}),
    "frank": (
        {
            "frank/human_annotations.json": "human_annotations.json",
            "frank/benchmark_data.json": "benchmark_data.json",
        },
        "human_annotations.json",
        {},
    ),
    "llm_aggrefact": (
        {
            "llm_aggrefact/data/dev-00000-of-00001.parquet": "dev-00000-of-00001.parquet",
            "llm_aggrefact/data/test-00000-of-00001.parquet": "test-00000-of-00001.parquet",
        },
        "test-00000-of-00001.parquet",
        {},
    ),
    "metal": ({"metal.json": "METAL_dataset.json"}, "", {"xlsum_articles": ARTICLES}),
    "mface": ({"mface.csv": "mface.csv"}, "", {}),
    "summeval": (
        {
            "summeval/model_annotations.aligned.paired.jsonl": (
                "model_annotations.aligned.paired.jsonl"
            )
        },
        "",
        {},
    ),
    "true": (
        {
            "true/paws_download.csv": "paws_download.csv",
            "true/frank_valid_download.csv": "frank_valid_download.csv",
        },
        "paws_download.csv",
        {},
    ),
}


def test_every_registered_benchmark_is_covered():
    assert sorted(RELEASES) == sorted(registry.names())


def _checkout(tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    """A clone of the release: its files under `data/`, a README beside them."""
    root = tmp_path / f"{name}-release"
    (root / "data").mkdir(parents=True)
    (root / "README.md").write_text("the release\n")
    for fixture, release_name in RELEASES[name][0].items():
        shutil.copyfile(DATA / fixture, root / "data" / release_name)
    return root


def _read(name: str, path: pathlib.Path):
    results = registry.get(name).read_all(path, **RELEASES[name][2])
    return [(len(r.examples), r.examples, r.drop_counts()) for r in results]


def _reference(name: str, itself: bool):
    files, single, options = RELEASES[name]
    if itself and single:
        (fixture,) = [f for f, n in files.items() if n == single]
        reference_path = DATA / fixture
        if name in ("frank", "true"):
            reference_path = reference_path.parent  # a file stands for its folder
    else:
        reference_path = DATA / next(iter(files))
        if len(files) > 1 or name == "true":
            reference_path = reference_path.parent
    return _read(name, reference_path)


@pytest.mark.parametrize("name", sorted(RELEASES))
@pytest.mark.parametrize("spelling", ["checkout root", "data folder", "the file itself"])
def test_a_reader_takes_every_spelling_of_the_release(tmp_path, name, spelling):
    root = _checkout(tmp_path, name)
    files, single, _ = RELEASES[name]
    path = {
        "checkout root": root,
        "data folder": root / "data",
        "the file itself": root / "data" / (single or next(iter(files.values()))),
    }[spelling]
    got = _read(name, path)
    assert got == _reference(name, spelling == "the file itself")
    assert sum(count for count, _, _ in got) > 0


def test_aggrefact_from_its_checkout_through_the_cli(tmp_path, capsys):
    root = _checkout(tmp_path, "aggrefact")
    out = tmp_path / "baselines"
    argv = ["baselines", "--benchmark", "aggrefact", "--benchmark_path", str(root)]
    assert cli.main([*argv, "--vocab", "demo", "--output_dir", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["rouge_l.aggrefact.jsonl"]
    assert len((out / "rouge_l.aggrefact.jsonl").read_text().splitlines()) == 28
    assert f"{root / 'data' / 'aggre_fact_final.csv'}: 28 examples kept" in capsys.readouterr().out


def test_a_folder_without_the_release_files_names_all_three_spellings(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(errors.UserError) as error:
        registry.get("aggrefact").read_all(tmp_path)
    assert str(error.value) == (
        f"{tmp_path} holds neither aggre_fact_final.csv nor aggre_fact_sota.csv, here or "
        "under data/ (a AggreFact CSV, the folder holding it, or the release's checkout "
        "root). Get it from Liyan06/AggreFact, data/aggre_fact_final.csv (or "
        "aggre_fact_sota.csv)."
    )


def test_a_pattern_matching_several_files_is_refused(tmp_path):
    for name in ("a.csv", "b.csv"):
        shutil.copyfile(DATA / "mface.csv", tmp_path / name)
    with pytest.raises(errors.UserError) as error:
        common.release_path(tmp_path, ("*.csv",), "mFACE CSV", "its release")
    assert str(error.value) == (
        f"{tmp_path} holds several files matching *.csv (a.csv, b.csv): pass the mFACE CSV itself"
    )
