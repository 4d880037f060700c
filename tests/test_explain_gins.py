"""The explainable metric's T5X gins: experiments/explain_{mt5,flan_t5}_{size}.gin,
runs/finetune_explain.gin, runs/infer_explain.gin, runs/greedy_decoding.gin and
smoke/explain_{train,tiny}.gin.

Followed through their includes with the T5X facts of tests/gin_t5x_testing.py (the T5.1.1
model gins under the Flan-T5 ones as in test_ice_gins.py). Checked: what each requires is
what its header says; T5X's own EncoderDecoderModel decoding greedily; the MetricInstruct
tasks at their lengths; TIGERScore's three epochs as steps from MetricInstruct's row count;
the exact train and infer commands; the smoke gin's tiny network on the demo explainer's
vocabulary and docs/tpu.md's commands.
"""

from __future__ import annotations

import math
import re

import pytest

from seahorse_t5x.formats import vocab
from tests import gin_t5x_testing as t5x
from tests.test_gin_t5x import _header, _required_in_header
from tests.test_ice_gins import FLAN_T5_CHECKPOINT_STEPS, T5_1_1_MODEL, T5_VOCAB_PATH

EXPLAIN_GINS = sorted((t5x.GIN_DIR / "experiments").glob("explain_*.gin"))
# MetricInstruct's rows (Jiang et al. 2024) and TIGERScore's recipe: 3 epochs, 128 a step.
METRIC_INSTRUCT_ROWS = 42_484
EPOCHS = 3
BATCH_SIZE = 128
FEATURE_LENGTHS = {"inputs": 1024, "targets": 512}  # tasks/explanations.py FEATURE_LENGTHS
GREEDY = "seahorse_t5x/gin/runs/greedy_decoding.gin"
FINETUNE = "seahorse_t5x/gin/runs/finetune_explain.gin"
INFER = "seahorse_t5x/gin/runs/infer_explain.gin"


@pytest.fixture(autouse=True)
def t5_1_1_facts(monkeypatch):
    for size in t5x.SIZES:
        monkeypatch.setitem(t5x.T5X_GINS, f"t5x/examples/t5/t5_1_1/{size}.gin", T5_1_1_MODEL)


def _still_required(resolved: t5x.Resolved) -> set[str]:
    return {m for m, v in resolved.macros.items() if t5x.is_macro(v, t5x.REQUIRED)}


def _assert_greedy_t5x_model(resolved: t5x.Resolved) -> None:
    # T5X's own model (not the SEAHORSE runs' LabelScoringModel), argmax decoding.
    assert resolved.macros["MODEL"] == ("@", "models.EncoderDecoderModel", True)
    assert GREEDY in resolved.includes
    b = resolved.bindings
    assert b[("", "t5x.models.EncoderDecoderModel", "decode_fn")] == (
        "@",
        "decoding.temperature_sample",
        False,
    )
    assert b[("", "t5x.decoding.temperature_sample", "temperature")] == 0.0
    assert "seahorse_t5x/gin/runs/label_scoring.gin" not in resolved.includes
    assert t5x.is_macro(
        b[("", "seahorse_t5x.tasks.explanations.metric_instruct_files", "files")],
        "METRIC_INSTRUCT_FILES",
    )
    assert "seahorse_t5x.tasks" in resolved.imports


def test_every_family_and_size_has_an_explain_gin():
    assert {p.stem for p in EXPLAIN_GINS} == {
        f"explain_{f}_{s}" for f in ("mt5", "flan_t5") for s in t5x.SIZES
    }


@pytest.mark.parametrize("path", EXPLAIN_GINS, ids=lambda p: p.stem)
def test_explain_gin_fine_tunes_with_tigerscores_recipe(path):
    family, size = re.fullmatch(r"explain_(mt5|flan_t5)_(\w+)", path.stem).groups()
    resolved = t5x.resolve(path)
    model_gin = f"seahorse_t5x/gin/models/{family}_{size}.gin"
    # Model gin first: a T5X model gin included later would reset the run's bindings.
    assert resolved.includes.index(model_gin) < resolved.includes.index(FINETUNE)
    assert "t5x/configs/runs/finetune.gin" in resolved.includes
    assert "seahorse_t5x/gin/runs/finetune.gin" not in resolved.includes
    macros = resolved.macros
    required = _still_required(resolved)
    assert required == _required_in_header(_header(path)) == {"MODEL_DIR", "METRIC_INSTRUCT_FILES"}
    _assert_greedy_t5x_model(resolved)
    assert macros["MIXTURE_OR_TASK_NAME"] == "metricinstruct"
    assert macros["TASK_FEATURE_LENGTHS"] == FEATURE_LENGTHS
    # Three epochs of MetricInstruct's rows, one example per (unpacked) row; validation and
    # a checkpoint each epoch.
    epoch = math.ceil(METRIC_INSTRUCT_ROWS / BATCH_SIZE)
    assert macros["BATCH_SIZE"] == BATCH_SIZE and macros["EVAL_PERIOD"] == epoch == 332
    b = resolved.bindings
    assert b[("train", "t5x.utils.DatasetConfig", "pack")] is False
    if family == "mt5":
        pretrained = 1_000_000
        assert macros["VOCAB_PATH"] == vocab.MT5_VOCAB_PATH
        assert macros["LOSS_NORMALIZING_FACTOR"] == 234496
        checkpoint = f"gs://t5-data/pretrained_models/t5x/mt5_{size}/checkpoint_{pretrained}"
    else:
        pretrained = FLAN_T5_CHECKPOINT_STEPS[size]
        assert macros["VOCAB_PATH"] == T5_VOCAB_PATH
        checkpoint = f"gs://t5-data/pretrained_models/t5x/flan_t5_{size}/checkpoint_{pretrained}"
    assert macros["INITIAL_CHECKPOINT_PATH"] == checkpoint
    assert macros["TRAIN_STEPS"] - pretrained == EPOCHS * epoch == 996
    assert round(EPOCHS * METRIC_INSTRUCT_ROWS / BATCH_SIZE) == 996
    # Adafactor's relative rate, constant (T5X's fine-tuning default).
    assert macros["LEARNING_RATE"] == 0.001
    assert t5x.is_macro(
        b[("", "t5x.utils.create_learning_rate_scheduler", "base_learning_rate")],
        "LEARNING_RATE",
    )
    # Validation decodes at the training lengths; checkpoints T5X's msgpack layout
    # (`explain` reads them), the most recent kept.
    assert t5x.is_macro(
        b[("infer_eval", "t5x.utils.DatasetConfig", "task_feature_lengths")],
        "TASK_FEATURE_LENGTHS",
    )
    assert b[("", "__main__.train", "use_orbax")] is False
    assert t5x.is_macro(b[("", "t5x.utils.SaveCheckpointConfig", "keep")], "CHECKPOINTS_TO_KEEP")
    assert t5x.is_macro(b[("", "t5x.utils.SaveCheckpointConfig", "period")], "EVAL_PERIOD")
    assert isinstance(macros["CHECKPOINTS_TO_KEEP"], int) and macros["CHECKPOINTS_TO_KEEP"] >= 1
    assert macros["USE_CACHED_TASKS"] is False and macros["DROPOUT_RATE"] == 0.1
    assert macros["BATCH_SIZE"] % macros["NUM_MICROBATCHES"] == 0


def _commands(header: str, module: str) -> list[list[tuple[str, str]]]:
    """The flags of each `python -m MODULE` command in a header."""
    return [
        re.findall(r"(--[\w.]+)(?:=(\S+))?", part.split("\n\n")[0])
        for part in header.split(f"python -m {module}")[1:]
    ]


@pytest.mark.parametrize("path", EXPLAIN_GINS, ids=lambda p: p.stem)
def test_header_has_the_exact_train_and_infer_commands(path):
    header = _header(path)
    family_size = path.stem.removeprefix("explain_")
    (train,) = _commands(header, "t5x.train")
    assert train[0] == ("--gin_file", f"seahorse_t5x/gin/experiments/{path.stem}.gin")
    assert train[-1][0] == "--alsologtostderr"
    names = [name for name, _ in train]
    for macro in _required_in_header(header):
        assert f"--gin.{macro}" in names
    (infer,) = _commands(header, "t5x.infer")
    assert [v for n, v in infer if n == "--gin_file"] == [
        f"seahorse_t5x/gin/models/{family_size}.gin",
        "seahorse_t5x/gin/runs/infer_explain.gin",
    ]
    required = _required_in_header(_header(t5x.GIN_DIR / "runs" / "infer_explain.gin"))
    assert {n.removeprefix("--gin.") for n, _ in infer if n.startswith("--gin.")} == required
    # The checkpoint the training run writes last.
    steps = t5x.resolve(path).macros["TRAIN_STEPS"]
    checkpoint = dict(infer)["--gin.CHECKPOINT_PATH"]
    assert checkpoint.endswith(f'/checkpoint_{steps}\\"')
    for command in (train, infer):
        for name, value in command:
            if name == "--gin.METRIC_INSTRUCT_FILES":
                # A Python dict for gin, one shell word.
                assert value.startswith("\"{'") and value.endswith("'}\"")
            elif name.startswith("--gin."):
                assert value.startswith('\\"') and value.endswith('\\"'), value


@pytest.mark.parametrize("size", ["small", "xxl"])
@pytest.mark.parametrize("family", ["mt5", "flan_t5"])
def test_infer_gin_decodes_greedily_in_predict_mode_at_the_training_lengths(family, size):
    resolved = t5x.resolve(t5x.GIN_DIR / "models" / f"{family}_{size}.gin")
    t5x.resolve(t5x.GIN_DIR / "runs" / "infer_explain.gin", resolved)
    assert "t5x/configs/runs/infer.gin" in resolved.includes
    required = _still_required(resolved)
    assert required == _required_in_header(_header(t5x.GIN_DIR / "runs" / "infer_explain.gin"))
    assert required == {"CHECKPOINT_PATH", "INFER_OUTPUT_DIR", "METRIC_INSTRUCT_FILES"}
    _assert_greedy_t5x_model(resolved)
    mode = resolved.bindings[("", "__main__.infer", "mode")]
    assert mode == "predict" and mode in t5x.T5X_INFER_MODES
    macros = resolved.macros
    assert macros["TASK_FEATURE_LENGTHS"] == FEATURE_LENGTHS
    assert macros["DROPOUT_RATE"] == 0.0 and macros["MIXTURE_OR_TASK_NAME"] == "metricinstruct"
    assert resolved.bindings[("", "t5x.utils.RestoreCheckpointConfig", "dtype")] == "float32"


def test_explanation_tasks_the_gins_name_are_registered():
    import seqio

    from seahorse_t5x.tasks import explanations

    assert explanations.FEATURE_LENGTHS == FEATURE_LENGTHS
    names = set(seqio.TaskRegistry.names())
    for path in [*EXPLAIN_GINS, t5x.GIN_DIR / "runs" / "infer_explain.gin"]:
        assert t5x.resolve(path).macros["MIXTURE_OR_TASK_NAME"] in names


def test_smoke_gin_runs_the_small_experiment_with_a_tiny_network_on_the_explainers_vocabulary():
    import sentencepiece as spm

    path = t5x.GIN_DIR / "smoke" / "explain_train.gin"
    resolved = t5x.resolve(path)
    assert resolved.includes.index(
        "seahorse_t5x/gin/experiments/explain_mt5_small.gin"
    ) < resolved.includes.index("seahorse_t5x/gin/smoke/explain_tiny.gin")
    assert "seahorse_t5x/gin/smoke/tiny.gin" in resolved.includes  # under explain_tiny.gin
    macros = resolved.macros
    required = _still_required(resolved)
    assert required == _required_in_header(_header(path)) == {"MODEL_DIR", "METRIC_INSTRUCT_FILES"}
    assert macros["INITIAL_CHECKPOINT_PATH"] is None
    assert macros["TRAIN_STEPS"] % macros["EVAL_PERIOD"] == 0
    assert macros["TASK_FEATURE_LENGTHS"] == FEATURE_LENGTHS
    assert macros["EVALUATOR_NUM_EXAMPLES"] >= 1
    # Model and tasks read one vocabulary, the explainer's, that the network's ids cover.
    assert macros["VOCAB_PATH"] == ("@", "vocab.demo_explanations_vocab_path", True)
    size = spm.SentencePieceProcessor(model_file=vocab.demo_explanations_vocab_path()).vocab_size()
    config = {k[2]: v for k, v in resolved.bindings.items() if k[1].endswith("T5Config")}
    assert config["vocab_size"] % 128 == 0 and size <= config["vocab_size"] < size + 128
    assert config["num_encoder_layers"] <= 2 and config["dtype"] == "float32"
    # infer takes the same network after its run gin: the same vocabulary and sizes.
    inferred = t5x.resolve(t5x.GIN_DIR / "models" / "mt5_small.gin")
    t5x.resolve(t5x.GIN_DIR / "runs" / "infer_explain.gin", inferred)
    t5x.resolve(t5x.GIN_DIR / "smoke" / "explain_tiny.gin", inferred)
    assert inferred.macros["VOCAB_PATH"] == macros["VOCAB_PATH"]
    assert {k[2]: v for k, v in inferred.bindings.items() if k[1].endswith("T5Config")} == config


def test_tpu_doc_shows_the_explanation_smoke_commands():
    docs = (t5x.ROOT / "docs" / "tpu.md").read_text(encoding="utf-8")
    section = docs.split("### Smoke-test of the explainable metric")[1].split("\n## ")[0]
    for module, gins in (
        ("t5x.train", ["seahorse_t5x/gin/smoke/explain_train.gin"]),
        ("t5x.infer", ["seahorse_t5x/gin/models/mt5_small.gin", "seahorse_t5x/gin/runs/infer_explain.gin", "seahorse_t5x/gin/smoke/explain_tiny.gin"]),
    ):  # fmt: skip
        command = section.split(f"python -m {module} ")[1].split("--alsologtostderr")[0]
        assert re.findall(r"--gin_file=(\S+)", command) == gins
    assert "seahorse-t5x t5x-explanations \\\n    --infer_output" in section
