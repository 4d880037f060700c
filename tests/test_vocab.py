"""The one vocabulary resolution order (`vocab.resolve_vocabulary_path`)."""

import gin
import pytest

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import vocab


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.delenv(constants.ENV_VOCAB, raising=False)
    gin.clear_config()
    yield monkeypatch
    gin.clear_config()


def _bind_gin(path):
    gin.bind_parameter("seahorse_t5x.formats.vocab.vocabulary_path.path", path)


def test_each_level_wins_over_the_ones_after_it(clean, tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "spiece.model").write_bytes(b"")

    def resolved():
        return vocab.resolve_vocabulary_path(
            "/explicit.model", trained_with="/recorded.model", checkpoint=hf
        )

    assert resolved() == "/explicit.model"
    with vocab.chosen_vocabulary("/chosen.model"):
        assert vocab.resolve_vocabulary_path(trained_with="/recorded.model") == "/chosen.model"
        assert resolved() == "/explicit.model"
    _bind_gin("/gin.model")
    clean.setenv(constants.ENV_VOCAB, "/env.model")
    assert vocab.resolve_vocabulary_path(trained_with="/recorded.model") == "/gin.model"
    gin.clear_config()
    assert vocab.resolve_vocabulary_path(trained_with="/recorded.model") == "/env.model"
    clean.delenv(constants.ENV_VOCAB)
    assert vocab.resolve_vocabulary_path(trained_with="/recorded.model", checkpoint=hf) == (
        "/recorded.model"
    )
    assert vocab.resolve_vocabulary_path(checkpoint=hf) == str(hf / "spiece.model")
    assert vocab.resolve_vocabulary_path(checkpoint=tmp_path) == vocab.MT5_VOCAB_PATH
    assert vocab.resolve_vocabulary_path() == vocab.MT5_VOCAB_PATH
    assert len(vocab.RESOLUTION_ORDER) == 6


def test_demo_names_the_shipped_vocabulary_at_every_level(clean):
    assert vocab.resolve_vocabulary_path("demo") == vocab.demo_vocab_path()
    clean.setenv(constants.ENV_VOCAB, "demo")
    assert vocab.resolve_vocabulary_path() == vocab.demo_vocab_path()
    assert vocab.resolve_vocabulary_path(trained_with="demo") == vocab.demo_vocab_path()


def test_the_gin_configurable_and_the_tasks_vocabulary_follow_the_same_order(clean):
    clean.setenv(constants.ENV_VOCAB, "demo")
    assert vocab.vocabulary_path() == vocab.demo_vocab_path()
    # get_vocabulary() honours a gin binding as the tasks' deferred vocabulary does.
    _bind_gin("/gin.model")
    assert vocab.vocabulary_path() == "/gin.model"
    with pytest.raises(errors.UserError, match="/gin.model"):
        vocab.get_vocabulary()
    gin.clear_config()
    with vocab.chosen_vocabulary("demo"):
        deferred = vocab.deferred_vocabulary()
        assert deferred._sentencepiece_model_file == vocab.demo_vocab_path()
        assert vocab.get_vocabulary() is vocab.get_vocabulary(vocab.demo_vocab_path())


def test_check_fits_refuses_a_vocabulary_larger_than_the_model(clean):
    demo = vocab.get_vocabulary("demo")
    vocab.check_fits(demo, 3072, "unused")
    with pytest.raises(errors.UserError) as raised:
        vocab.check_fits(demo, 64, "use the vocabulary the model was trained with")
    assert str(raised.value) == (
        "the vocabulary has 3000 ids but the model only 64: use the vocabulary the model "
        "was trained with"
    )


def test_a_gin_reference_or_a_scoped_binding_is_evaluated_as_t5x_gins_write_it(clean):
    # T5X gins bind `VOCAB_PATH = @vocab.demo_vocab_path()` and pass the macro on.
    gin.parse_config(
        "from __gin__ import dynamic_registration\n"
        "from seahorse_t5x.formats import vocab\n"
        "VOCAB_PATH = @vocab.demo_vocab_path()\n"
        "vocab.vocabulary_path.path = %VOCAB_PATH\n"
    )
    assert vocab.resolve_vocabulary_path() == vocab.demo_vocab_path()
    deferred = vocab.deferred_vocabulary()
    assert deferred._sentencepiece_model_file == vocab.demo_vocab_path()
    assert deferred.vocab_size == vocab.get_vocabulary("demo").vocab_size
    gin.clear_config()
    # A binding in a gin scope applies inside that scope only (the demo binds its own).
    with gin.unlock_config():
        gin.bind_parameter(
            "outer/inner/seahorse_t5x.formats.vocab.vocabulary_path.path", "/scoped.model"
        )
    assert vocab.resolve_vocabulary_path() == vocab.MT5_VOCAB_PATH
    with gin.config_scope("outer"), gin.config_scope("inner"):
        assert vocab.resolve_vocabulary_path() == "/scoped.model"
