"""Every gin file of the local runner parses against the real configurables."""

import pathlib

import gin
import pytest

from seahorse_t5x import errors
from seahorse_t5x.runner import gin_config, trainer

GIN_ROOT = pathlib.Path(__file__).resolve().parents[1] / "seahorse_t5x" / "gin"
LOCAL_FILES = sorted(
    str(p.relative_to(GIN_ROOT)) for d in ("local", "test") for p in (GIN_ROOT / d).rglob("*.gin")
)
# Values for the macros a file may leave to the user.
REQUIRED = {
    "MODEL_DIR": "'/tmp/model'",
    "MIXTURE_OR_TASK_NAME": "'seahorse_q4'",
    "TASK_FEATURE_LENGTHS": "{'inputs': 64, 'targets': 4}",
    "TRAIN_STEPS": "10",
    "INITIAL_CHECKPOINT_PATH": "'/tmp/init'",
}


def _bound_arguments(path: str, bindings: list[str]) -> dict:
    gin.clear_config()
    gin_config.parse([path], bindings, [str(GIN_ROOT)])
    captured = {}
    original = trainer.Trainer

    class _Capture:
        def __init__(self, config):
            captured["config"] = config

        def run(self, on_step=None):
            return None

    trainer.Trainer = _Capture
    try:
        gin.get_configurable(trainer.train)()
    finally:
        trainer.Trainer = original
        gin.clear_config()
    return captured["config"]


def test_there_are_local_and_test_gin_files():
    assert "local/train.gin" in LOCAL_FILES
    assert "test/tiny.gin" in LOCAL_FILES
    assert any(name.startswith("local/models/") for name in LOCAL_FILES)


@pytest.mark.parametrize("path", LOCAL_FILES)
def test_gin_file_parses_and_configures_the_trainer(path):
    if path.startswith("local/models/"):
        bindings = [f"{k} = {v}" for k, v in REQUIRED.items()]
        gin.clear_config()
        gin_config.parse(["local/train.gin", path], bindings, [str(GIN_ROOT)])
        size = gin.query_parameter("%MODEL_SIZE")
        gin.clear_config()
        assert size == pathlib.Path(path).stem
        return
    bindings = [f"{k} = {v}" for k, v in REQUIRED.items()]
    config = _bound_arguments(path, bindings)
    assert isinstance(config, trainer.TrainConfig)
    config.check()
    assert config.model_dir == "/tmp/model"
    assert config.train_steps == 10
    assert set(config.task_feature_lengths) == {"inputs", "targets"}


def test_required_macros_are_reported_by_name():
    gin.clear_config()
    with pytest.raises(errors.UserError, match="gin macro MODEL_DIR is required") as info:
        gin_config.parse(["local/train.gin"], [], [str(GIN_ROOT)])
    gin.clear_config()
    assert str(info.value) == (
        "gin macro MODEL_DIR is required: pass --gin.MODEL_DIR=VALUE or bind it in a gin file"
    )


def test_tiny_test_gin_sets_a_demo_vocabulary_sized_model():
    bindings = [f"{k} = {v}" for k, v in REQUIRED.items() if k in ("MODEL_DIR",)]
    bindings.append("MIXTURE_OR_TASK_NAME = 'seahorse_all'")
    config = _bound_arguments("test/tiny.gin", bindings)
    assert config.model_size == "tiny"
    assert config.model_overrides == {"vocab_size": 3072}
    assert config.train_steps == 4


def test_unset_macros_take_the_train_config_defaults():
    import dataclasses

    bindings = [f"{k} = {v}" for k, v in REQUIRED.items() if k != "INITIAL_CHECKPOINT_PATH"]
    config = _bound_arguments("local/train.gin", bindings)
    defaults = trainer.TrainConfig(
        model_dir="/tmp/model",
        mixture_or_task_name="seahorse_q4",
        task_feature_lengths={"inputs": 64, "targets": 4},
        train_steps=10,
    )
    assert dataclasses.asdict(config) == dataclasses.asdict(defaults)
    # The documented values (docs/runner.md) are the ones a run gets.
    assert (config.batch_size, config.eval_period, config.learning_rate) == (32, 1000, 1e-3)
    assert (config.checkpoint_period, config.keep_checkpoints, config.pack) == (1000, 3, True)


def test_a_set_macro_overrides_the_default():
    bindings = [f"{k} = {v}" for k, v in REQUIRED.items()]
    config = _bound_arguments("local/train.gin", [*bindings, "BATCH_SIZE = 4", "PACK = False"])
    assert (config.batch_size, config.pack, config.eval_period) == (4, False, 1000)


def test_the_documented_macro_defaults_are_train_config_s():
    import ast
    import dataclasses

    docs = (GIN_ROOT.parents[1] / "docs" / "runner.md").read_text(encoding="utf-8")
    fields = {f.name: f for f in dataclasses.fields(trainer.TrainConfig)}
    checked = 0
    for line in docs.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`") or cells[1] == "required":
            continue
        macro = cells[0].strip("`")
        if macro not in gin_config.MACROS:
            continue
        field = fields[macro.lower()]
        default = (
            field.default if field.default is not dataclasses.MISSING else field.default_factory()
        )
        assert ast.literal_eval(cells[1].strip("`")) == default, macro
        checked += 1
    assert checked == len(gin_config.MACROS) - len(REQUIRED) + 1  # INITIAL_CHECKPOINT_PATH
