"""The T5X experiment, run and model gins say what a T5X run needs, consistently.

Each experiment gin is followed through its includes (T5X's own files emulated from the
facts in tests/gin_t5x_testing.py) and checked for: every macro T5X or this project marks
REQUIRED is set, except the ones its header says the user must set; mT5 fine-tuning values
(lengths, loss normalizer, checkpoint, absolute steps); task names that the task modules
register; a best-checkpoint metric in the exact form T5X logs for a metric the validation
task computes; and a header with the exact command line.
"""

from __future__ import annotations

import re

import pytest

from seahorse_t5x.evaluation import seqio_metrics
from seahorse_t5x.formats import vocab
from tests import gin_t5x_testing as t5x

# The SEAHORSE metrics' fine-tuning experiments; the ICE inference gins (ice_*.gin) and the
# explainable metric's (explain_*.gin) have their own tests.
EXPERIMENTS = sorted(
    p
    for p in (t5x.GIN_DIR / "experiments").glob("*.gin")
    if not p.stem.startswith(("ice_", "explain_"))
)
PRETRAINED_STEPS = 1_000_000
SCORE_TARGET_TOKENS = 2  # '1' or '0', then EOS: the score tasks' length
# Training target slots of the packed rows: 2 per example, so they bound the examples per
# row; SEAHORSE inputs are hundreds of tokens, NLI pairs tens.
TRAIN_TARGET_SLOTS = {"seahorse": 64, "xnli": 128, "nli": 128, "distill": 64}


def _size(path) -> str:
    return path.stem.rsplit("_", 1)[1]


def _header(path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return "\n".join(lines)


def _required_in_header(header: str) -> set[str]:
    block = header.split("Required to be set:")[1].split("Commonly overridden:")[0]
    return set(re.findall(r"^- ([A-Z_]+)\b", block, flags=re.M))


@pytest.fixture(scope="module")
def registered_names() -> set[str]:
    """Task and mixture names the project's task modules register (imports TensorFlow)."""
    import seqio

    import seahorse_t5x.tasks  # noqa: F401
    from seahorse_t5x.tasks import nli  # noqa: F401

    return set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_experiment_sets_what_t5x_requires(path):
    resolved = t5x.resolve(path)
    size = _size(path)
    # Model gin first, then the run gin: a T5X model gin resets bindings made before it.
    assert resolved.includes.index(
        f"seahorse_t5x/gin/models/mt5_{size}.gin"
    ) < resolved.includes.index("seahorse_t5x/gin/runs/finetune.gin")
    still_required = {m for m, v in resolved.macros.items() if t5x.is_macro(v, t5x.REQUIRED)}
    assert still_required == _required_in_header(_header(path))
    assert "MODEL_DIR" in still_required
    if path.stem.startswith("seahorse_"):
        assert still_required == {"MODEL_DIR", "SEAHORSE_DATA_DIR"}
    elif path.stem.startswith("distill_"):  # validated on SEAHORSE; the teacher's scores
        assert still_required == {"MODEL_DIR", "SEAHORSE_DATA_DIR", "TEACHER_SCORES"}
    else:
        assert still_required == {"MODEL_DIR"}
        assert resolved.macros["SEAHORSE_DATA_DIR"] is None
    macros = resolved.macros
    family = path.stem.split("_")[0]
    assert macros["TASK_FEATURE_LENGTHS"] == {
        "inputs": 2048,
        "targets": TRAIN_TARGET_SLOTS[family],
    }
    # Validation scores at the score tasks' lengths, whatever the training rows hold.
    assert macros["EVAL_TASK_FEATURE_LENGTHS"] == {"inputs": 2048, "targets": SCORE_TARGET_TOKENS}
    assert macros["LOSS_NORMALIZING_FACTOR"] == 1024 * 229 == 234496
    assert macros["INITIAL_CHECKPOINT_PATH"] == (
        f"gs://t5-data/pretrained_models/t5x/mt5_{size}/checkpoint_{PRETRAINED_STEPS}"
    )
    assert isinstance(macros["TRAIN_STEPS"], int) and macros["TRAIN_STEPS"] > PRETRAINED_STEPS
    assert macros["USE_CACHED_TASKS"] is False
    assert isinstance(macros["CHECKPOINTS_TO_KEEP"], int) and macros["CHECKPOINTS_TO_KEEP"] >= 1
    assert macros["DROPOUT_RATE"] == 0.1
    assert isinstance(macros["BATCH_SIZE"], int)
    microbatches = macros["NUM_MICROBATCHES"]
    assert microbatches is None or macros["BATCH_SIZE"] % microbatches == 0


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_header_has_the_exact_train_command(path):
    header = _header(path)
    assert "Required to be set:" in header and "Commonly overridden:" in header
    command = header.split("python -m t5x.train")[1]
    flags = re.findall(r"(--[\w.]+)(?:=(\S+))?", command)
    # T5X finds the gins in the installed package, from any folder, as it finds its own.
    assert flags[0] == ("--gin_file", f"seahorse_t5x/gin/experiments/{path.stem}.gin")
    names = [name for name, _ in flags]
    assert names[-1] == "--alsologtostderr"
    for macro in _required_in_header(header):
        assert f"--gin.{macro}" in names, f"the command does not set {macro}"
    for name, value in flags:
        if name.startswith("--gin."):
            assert value.startswith('\\"') and value.endswith('\\"'), value


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_tasks_exist_and_best_checkpoint_metric_is_logged(path, registered_names):
    macros = t5x.resolve(path).macros
    train_task = macros["MIXTURE_OR_TASK_NAME"]
    eval_task = macros["EVAL_MIXTURE_OR_TASK_NAME"]
    if path.stem.startswith("distill_"):
        # Registered by the gin itself over the teacher's scores, then named: distil_q4.
        assert train_task == ("@", "distillation.distillation_task", True)
    else:
        assert train_task in registered_names
    assert eval_task in registered_names
    # T5X's inference evaluator logs to MODEL_DIR/inference_eval/<task>/ with tag
    # eval/<metric>; SaveBestCheckpointer and the Orbax manager read '{run}/{tag}'.
    match = re.fullmatch(r"inference_eval/([\w.:#]+)/eval/(\w+)", macros["BEST_CHECKPOINT_METRIC"])
    assert match, macros["BEST_CHECKPOINT_METRIC"]
    logged_task, metric = match.groups()
    if eval_task.endswith("_score"):
        assert logged_task.endswith("_score")
        # A mixture is evaluated task by task: the metric's run is one of its tasks.
        assert logged_task == eval_task or logged_task.startswith(eval_task.removesuffix("_score"))
        assert metric in seqio_metrics.score_metrics([1, 0, 1, 0], [0.9, 0.2, 0.7, 0.4])
    else:
        assert logged_task == eval_task
        assert metric in seqio_metrics.predict_metrics(["1", "0"], ["1", "1"])
    assert logged_task in registered_names
    if path.stem.startswith("seahorse_q"):
        question = path.stem.split("_")[1]
        assert train_task == f"seahorse_{question}" and eval_task == f"seahorse_{question}_score"


def test_finetune_gin_selects_checkpoints_by_validation_metric():
    resolved = t5x.resolve(t5x.GIN_DIR / "runs" / "finetune.gin")
    b = resolved.bindings
    assert t5x.is_macro(
        b[("infer_eval", "t5x.utils.DatasetConfig", "mixture_or_task_name")],
        "EVAL_MIXTURE_OR_TASK_NAME",
    )
    assert t5x.is_macro(
        b[("infer_eval", "t5x.utils.DatasetConfig", "task_feature_lengths")],
        "EVAL_TASK_FEATURE_LENGTHS",
    )
    assert t5x.is_macro(b[("", "t5x.utils.SaveCheckpointConfig", "keep")], "CHECKPOINTS_TO_KEEP")
    # Every checkpoint is written at an evaluation step, so each gets a metric.
    assert t5x.is_macro(b[("", "t5x.utils.SaveCheckpointConfig", "period")], "EVAL_PERIOD")
    for manager in (
        "t5x.checkpoints.SaveBestCheckpointer",
        "t5x.checkpoints.OrbaxCheckpointManagerInterface",
    ):
        assert t5x.is_macro(b[("", manager, "metric_name_to_monitor")], "BEST_CHECKPOINT_METRIC")
        assert b[("", manager, "metric_mode")] == "max"
        # The pre-training checkpoint written before the first step never gets a metric:
        # with this False it is pruned instead of kept for good (the latest is always kept).
        assert b[("", manager, "keep_checkpoints_without_metrics")] is False
    assert t5x.is_macro(
        b[("", "seahorse_t5x.tasks.seahorse.data_dir", "path")], "SEAHORSE_DATA_DIR"
    )
    assert "seahorse_t5x.tasks" in resolved.imports
    # Training rows are packed first-fit-decreasing (SeqIO's packer, reordered windows).
    converter = b[("", "t5x.models.EncoderDecoderModel", "feature_converter_cls")]
    assert converter == ("@", "packing.FirstFitPackingConverter", False)
    assert "seahorse_t5x.tasks.packing" in resolved.imports


@pytest.mark.parametrize("size", t5x.SIZES)
def test_model_gin_vocabulary_equals_the_tasks(size, monkeypatch):
    resolved = t5x.resolve(t5x.GIN_DIR / "models" / f"mt5_{size}.gin")
    assert resolved.includes[0] == f"t5x/examples/t5/mt5/{size}.gin"
    b = resolved.bindings
    model_file = b[("", "seqio.SentencePieceVocabulary", "sentencepiece_model_file")]
    task_path = b[("", "seahorse_t5x.formats.vocab.vocabulary_path", "path")]
    assert t5x.is_macro(model_file, "VOCAB_PATH") and t5x.is_macro(task_path, "VOCAB_PATH")
    # T5X compares path strings and extra_ids: the tasks' default must be the same string.
    monkeypatch.delenv("SEAHORSE_VOCAB", raising=False)
    assert resolved.macros["VOCAB_PATH"] == vocab.vocabulary_path() == vocab.MT5_VOCAB_PATH
    assert vocab.MT5_EXTRA_IDS == 0  # seqio.SentencePieceVocabulary's default, as T5X uses
    assert resolved.macros["LOSS_NORMALIZING_FACTOR"] == 234496


@pytest.mark.parametrize(
    ("name", "t5x_gin", "user_macros"),
    [
        (
            "eval",
            "t5x/configs/runs/eval.gin",
            {"MIXTURE_OR_TASK_NAME", "CHECKPOINT_PATH", "EVAL_OUTPUT_DIR"},
        ),
        (
            "infer_score",
            "t5x/configs/runs/infer.gin",
            {"MIXTURE_OR_TASK_NAME", "CHECKPOINT_PATH", "INFER_OUTPUT_DIR"},
        ),
    ],
)
def test_eval_and_infer_gins_score_at_training_lengths(name, t5x_gin, user_macros):
    model = t5x.GIN_DIR / "models" / "mt5_xxl.gin"
    resolved = t5x.resolve(model)
    t5x.resolve(t5x.GIN_DIR / "runs" / f"{name}.gin", resolved)
    assert t5x_gin in resolved.includes
    still_required = {m for m, v in resolved.macros.items() if t5x.is_macro(v, t5x.REQUIRED)}
    # DROPOUT_RATE (REQUIRED in the model gin) must be set by the run gin; the SEAHORSE data
    # folder is left to the SEAHORSE tasks, which read it when their dataset is built.
    assert still_required == user_macros
    assert resolved.macros["SEAHORSE_DATA_DIR"] is None
    assert resolved.macros["DROPOUT_RATE"] == 0.0
    assert resolved.macros["TASK_FEATURE_LENGTHS"] == {
        "inputs": 2048,
        "targets": SCORE_TARGET_TOKENS,
    }
    # The same lengths as the validation during training.
    finetune = t5x.resolve(t5x.GIN_DIR / "runs" / "finetune.gin").macros
    assert finetune["EVAL_TASK_FEATURE_LENGTHS"] == resolved.macros["TASK_FEATURE_LENGTHS"]
    header = _header(t5x.GIN_DIR / "runs" / f"{name}.gin")
    assert _required_in_header(header) == still_required
    if name == "infer_score":
        mode = resolved.bindings[("", "__main__.infer", "mode")]
        assert mode == "score" and mode in t5x.T5X_INFER_MODES
    # The model is LabelScoringModel over the model gin's EncoderDecoderModel, in float32
    # weights (T5X's infer.gin restores bfloat16) and activations (mT5's gins: bfloat16).
    _assert_label_scoring(resolved, score_aux=name == "infer_score")
    assert resolved.bindings[("", "t5x.utils.RestoreCheckpointConfig", "dtype")] == "float32"
    assert resolved.bindings[("", "t5x.examples.t5.network.T5Config", "dtype")] == "float32"


def _assert_label_scoring(resolved: t5x.Resolved, score_aux: bool) -> None:
    assert resolved.macros["MODEL"] == ("@", "t5x_models.label_scoring_model", True)
    function = "seahorse_t5x.model.t5x_models.label_scoring_model"
    assert resolved.bindings[("", function, "model")] == ("@", "models.EncoderDecoderModel", True)
    assert resolved.bindings.get(("", function, "score_aux"), False) is score_aux
    assert "seahorse_t5x/gin/runs/label_scoring.gin" in resolved.includes


def test_finetune_gin_validates_with_label_scoring_model_and_packs_first_fit():
    # Validation scores are log P(yes); the packing converter is still bound on the
    # EncoderDecoderModel the label-scoring model is made from.
    resolved = t5x.resolve(t5x.GIN_DIR / "models" / "mt5_small.gin")
    t5x.resolve(t5x.GIN_DIR / "runs" / "finetune.gin", resolved)
    _assert_label_scoring(resolved, score_aux=False)
    converter = resolved.bindings[("", "t5x.models.EncoderDecoderModel", "feature_converter_cls")]
    assert converter == ("@", "packing.FirstFitPackingConverter", False)
    # The model gin comes first, so its MODEL is the one replaced.
    assert resolved.includes.index("t5x/examples/t5/mt5/small.gin") < resolved.includes.index(
        "seahorse_t5x/gin/runs/label_scoring.gin"
    )


def test_smoke_gins_run_the_q4_experiment_with_a_tiny_network_on_the_demo_vocabulary():
    import sentencepiece as spm

    path = t5x.GIN_DIR / "smoke" / "train.gin"
    resolved = t5x.resolve(path)
    # The experiment gin as users run it, then the tiny network on top of it.
    assert resolved.includes.index("seahorse_t5x/gin/experiments/seahorse_q4_small.gin") < (
        resolved.includes.index("seahorse_t5x/gin/smoke/tiny.gin")
    )
    macros = resolved.macros
    still_required = {m for m, v in macros.items() if t5x.is_macro(v, t5x.REQUIRED)}
    assert (
        still_required
        == _required_in_header(_header(path))
        == {
            "MODEL_DIR",
            "SEAHORSE_DATA_DIR",
        }
    )
    assert macros["INITIAL_CHECKPOINT_PATH"] is None
    assert macros["TRAIN_STEPS"] == 40 and macros["TRAIN_STEPS"] % macros["EVAL_PERIOD"] == 0
    assert macros["MIXTURE_OR_TASK_NAME"] == "seahorse_q4"
    # Model and tasks read one vocabulary: the demo one, computed once by the same function.
    assert macros["VOCAB_PATH"] == ("@", "vocab.demo_vocab_path", True)
    demo_size = spm.SentencePieceProcessor(model_file=vocab.demo_vocab_path()).vocab_size()
    config = {k[2]: v for k, v in resolved.bindings.items() if k[1].endswith("T5Config")}
    assert config["vocab_size"] % 128 == 0 and demo_size <= config["vocab_size"] < demo_size + 128
    assert config["num_encoder_layers"] <= 2 and config["emb_dim"] <= 128
    train_lengths, eval_lengths = (
        macros["TASK_FEATURE_LENGTHS"],
        macros["EVAL_TASK_FEATURE_LENGTHS"],
    )
    assert eval_lengths == {"inputs": train_lengths["inputs"], "targets": SCORE_TARGET_TOKENS}
    assert train_lengths["targets"] > SCORE_TARGET_TOKENS
    # eval and infer take smoke/score.gin after their run gin: the score lengths, 2 targets.
    for run in ("eval", "infer_score"):
        scored = t5x.resolve(t5x.GIN_DIR / "models" / "mt5_small.gin")
        t5x.resolve(t5x.GIN_DIR / "runs" / f"{run}.gin", scored)
        t5x.resolve(t5x.GIN_DIR / "smoke" / "score.gin", scored)
        assert scored.macros["TASK_FEATURE_LENGTHS"] == eval_lengths
        assert scored.macros["VOCAB_PATH"] == macros["VOCAB_PATH"]
    # The tiny network alone leaves any experiment's lengths as they are: after
    # experiments/seahorse_q4_small.gin, its 2048/64 packed training rows stay.
    experiment = t5x.resolve(t5x.GIN_DIR / "experiments" / "seahorse_q4_small.gin")
    lengths = dict(experiment.macros["TASK_FEATURE_LENGTHS"])
    t5x.resolve(t5x.GIN_DIR / "smoke" / "tiny.gin", experiment)
    assert experiment.macros["TASK_FEATURE_LENGTHS"] == lengths == {"inputs": 2048, "targets": 64}
    # docs/tpu.md shows the three commands with these gins.
    docs = (t5x.ROOT / "docs" / "tpu.md").read_text(encoding="utf-8")
    docs = docs.split("## Smoke-test on CPU before renting a pod")[1].split("\n## ")[0]
    for module, gins in (
        ("t5x.train", ["seahorse_t5x/gin/smoke/train.gin"]),
        ("t5x.eval", ["seahorse_t5x/gin/models/mt5_small.gin", "seahorse_t5x/gin/runs/eval.gin", "seahorse_t5x/gin/smoke/score.gin"]),
        ("t5x.infer", ["seahorse_t5x/gin/models/mt5_small.gin", "seahorse_t5x/gin/runs/infer_score.gin", "seahorse_t5x/gin/smoke/score.gin"]),
    ):  # fmt: skip
        command = docs.split(f"python -m {module} ")[1].split("--alsologtostderr")[0]
        assert re.findall(r"--gin_file=(\S+)", command) == gins
