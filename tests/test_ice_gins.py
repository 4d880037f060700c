"""The ICE inference gins (gin/experiments/ice_*.gin) and the Flan-T5 model gins.

Followed through their includes with the T5X facts of tests/gin_t5x_testing.py, plus the
T5.1.1 model gins (t5x/examples/t5/t5_1_1/{size}.gin: the macros of the mT5 gins, which
include them; vocabulary `cc_all.32000.100extra`, extra_ids left at 0).
"""

from __future__ import annotations

import re

import pytest

from seahorse_t5x.formats import vocab
from tests import gin_t5x_testing as t5x
from tests.test_gin_t5x import _header, _required_in_header

T5_VOCAB_PATH = "gs://t5-data/vocabs/cc_all.32000.100extra/sentencepiece.model"
# t5x docs/models.md: the public Flan-T5 T5X checkpoints.
FLAN_T5_CHECKPOINT_STEPS = {
    "small": 1198000,
    "base": 1184000,
    "large": 1164000,
    "xl": 1138000,
    "xxl": 1114000,
}
# T5X's mT5 model gins are its T5.1.1 gins with the mC4 vocabulary: the same macro facts.
T5_1_1_MODEL = t5x.T5X_GINS["t5x/examples/t5/mt5/base.gin"]
ICE_GINS = sorted((t5x.GIN_DIR / "experiments").glob("ice_*.gin"))


@pytest.fixture(autouse=True)
def t5_1_1_facts(monkeypatch):
    for size in t5x.SIZES:
        monkeypatch.setitem(t5x.T5X_GINS, f"t5x/examples/t5/t5_1_1/{size}.gin", T5_1_1_MODEL)


def test_every_family_and_size_has_an_ice_gin():
    names = {p.stem for p in ICE_GINS}
    assert names == {f"ice_{f}_{s}" for f in ("flan_t5", "mt0") for s in t5x.SIZES}


@pytest.mark.parametrize("size", t5x.SIZES)
def test_flan_t5_model_gin_shares_the_t5_vocabulary_with_the_tasks(size):
    resolved = t5x.resolve(t5x.GIN_DIR / "models" / f"flan_t5_{size}.gin")
    assert resolved.includes == [f"t5x/examples/t5/t5_1_1/{size}.gin"]
    b = resolved.bindings
    model_file = b[("", "seqio.SentencePieceVocabulary", "sentencepiece_model_file")]
    task_path = b[("", "seahorse_t5x.formats.vocab.vocabulary_path", "path")]
    assert t5x.is_macro(model_file, "VOCAB_PATH") and t5x.is_macro(task_path, "VOCAB_PATH")
    assert resolved.macros["VOCAB_PATH"] == T5_VOCAB_PATH
    # T5X's T5.1.1 gins leave extra_ids at 0, as the project's task vocabulary does.
    assert vocab.MT5_EXTRA_IDS == 0
    assert ("", "seqio.SentencePieceVocabulary", "extra_ids") not in b


@pytest.mark.parametrize("path", ICE_GINS, ids=lambda p: p.stem)
def test_ice_gin_runs_t5x_infer_in_score_mode(path):
    family, size = re.fullmatch(r"ice_(flan_t5|mt0)_(\w+)", path.stem).groups()
    resolved = t5x.resolve(path)
    model_gin = f"seahorse_t5x/gin/models/{'flan_t5' if family == 'flan_t5' else 'mt5'}_{size}.gin"
    # Model gin first: a T5X model gin included later would reset the run's bindings.
    assert resolved.includes.index(model_gin) < resolved.includes.index(
        "seahorse_t5x/gin/runs/infer_score.gin"
    )
    assert "t5x/configs/runs/infer.gin" in resolved.includes
    macros = resolved.macros
    still_required = {m for m, v in macros.items() if t5x.is_macro(v, t5x.REQUIRED)}
    assert still_required == _required_in_header(_header(path))
    expected = {"INFER_OUTPUT_DIR", "SEAHORSE_DATA_DIR"}
    if family == "mt0":
        expected.add("CHECKPOINT_PATH")  # mT0 is published in HF format only
        assert macros["VOCAB_PATH"] == vocab.MT5_VOCAB_PATH
    else:
        step = FLAN_T5_CHECKPOINT_STEPS[size]
        assert macros["CHECKPOINT_PATH"] == (
            f"gs://t5-data/pretrained_models/t5x/flan_t5_{size}/checkpoint_{step}"
        )
        assert macros["VOCAB_PATH"] == T5_VOCAB_PATH
    assert still_required == expected
    assert macros["DROPOUT_RATE"] == 0.0
    assert macros["TASK_FEATURE_LENGTHS"] == {"inputs": 2048, "targets": 4}
    assert re.fullmatch(r"ice_q[1-6]_k[24]_(uniform|stratified)", macros["MIXTURE_OR_TASK_NAME"])
    mode = resolved.bindings[("", "__main__.infer", "mode")]
    assert mode == "score" and mode in t5x.T5X_INFER_MODES
    assert "seahorse_t5x.tasks" in resolved.imports
    # LabelScoringModel scores the ICE tasks' own answer words, as `evaluate` does.
    assert resolved.macros["MODEL"] == ("@", "t5x_models.label_scoring_model", True)
    function = "seahorse_t5x.model.t5x_models.label_scoring_model"
    assert resolved.bindings[("", function, "answer_words")] == (
        "@",
        "ice_format.answer_words",
        True,
    )
    assert resolved.bindings[("", function, "score_aux")] is True


@pytest.mark.parametrize("path", ICE_GINS, ids=lambda p: p.stem)
def test_ice_gin_header_has_the_exact_infer_command(path):
    header = _header(path)
    command = header.split("python -m t5x.infer")[1]
    flags = re.findall(r"(--[\w.]+)(?:=(\S+))?", command)
    # T5X finds the gins in the installed package, from any folder, as it finds its own.
    assert flags[0] == ("--gin_file", f"seahorse_t5x/gin/experiments/{path.stem}.gin")
    assert flags[-1][0] == "--alsologtostderr"
    names = [name for name, _ in flags]
    for macro in _required_in_header(header):
        assert f"--gin.{macro}" in names
    for name, value in flags:
        if name.startswith("--gin."):
            assert value.startswith('\\"') and value.endswith('\\"'), value


def test_ice_gin_tasks_are_registered():
    import seqio

    import seahorse_t5x.tasks  # noqa: F401

    for path in ICE_GINS:
        assert t5x.resolve(path).macros["MIXTURE_OR_TASK_NAME"] in seqio.TaskRegistry.names()
