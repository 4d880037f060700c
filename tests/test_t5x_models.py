"""`seahorse_t5x.model.t5x_models`: the two-way log-softmax of `LabelScoringModel.score_batch`
against numpy, the module without T5X, and (where T5X is installed) the class on a tiny
T5X network against T5X's own logits and this project's `score` engine."""

from __future__ import annotations

import importlib
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from seahorse_t5x.model import t5x_models


def _numpy_two_way(first_step_logits: np.ndarray, yes: int, no: int) -> np.ndarray:
    pair = first_step_logits[:, [yes, no]].astype(np.float64)
    return pair - np.logaddexp(pair[:, :1], pair[:, 1:])


def test_label_log_probs_is_the_two_way_log_softmax_of_the_first_step():
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 4.0, size=(5, 3, 40)).astype(np.float32)
    logits[0, 0, [7, 3]] = [30.0, -30.0]  # P(yes) near 1: log P(no) about -60
    got = t5x_models.label_log_probs(jnp.asarray(logits), (7, 3))
    assert got.shape == (5, 2) and got.dtype == jnp.float32
    expected = _numpy_two_way(logits[:, 0], 7, 3)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=1e-6)
    assert float(got[0, 1]) == pytest.approx(-60.0, abs=1e-4)
    np.testing.assert_allclose(np.exp(np.asarray(got)).sum(axis=1), 1.0, atol=1e-6)
    # Later decoder steps play no part; [batch, vocab] logits are the first step itself.
    changed = logits.copy()
    changed[:, 1:] = 0.0
    np.testing.assert_array_equal(t5x_models.label_log_probs(jnp.asarray(changed), (7, 3)), got)
    np.testing.assert_array_equal(
        t5x_models.label_log_probs(jnp.asarray(logits[:, 0]), (7, 3)), got
    )


def test_bfloat16_logits_are_scored_in_float32():
    logits = np.zeros((2, 1, 8), np.float32)
    logits[:, 0, 1] = [2.0, -1.0]
    got = t5x_models.label_log_probs(jnp.asarray(logits, jnp.bfloat16), (1, 0))
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), _numpy_two_way(logits[:, 0], 1, 0), atol=1e-6)


def test_module_imports_without_t5x_and_says_so_only_when_the_class_is_used(monkeypatch):
    # A fresh import of the module with T5X made unimportable (the package's attribute put
    # back afterwards too).
    from seahorse_t5x import model

    monkeypatch.setattr(model, "t5x_models", t5x_models)
    monkeypatch.setitem(sys.modules, "t5x", None)
    monkeypatch.setitem(sys.modules, "t5x.models", None)
    monkeypatch.delitem(sys.modules, "seahorse_t5x.model.t5x_models")
    module = importlib.import_module("seahorse_t5x.model.t5x_models")
    assert module is not t5x_models
    assert module.AUX_LOG_P_NO == "log_p_no"
    assert module.label_log_probs(jnp.zeros((1, 1, 4)), (1, 2)).shape == (1, 2)
    message = (
        "seahorse_t5x.model.t5x_models.LabelScoringModel is a T5X model class and needs T5X, which "
        "seahorse-t5x does not install"
    )
    with pytest.raises(ImportError, match=message):
        module.LabelScoringModel  # noqa: B018
    with pytest.raises(ImportError, match=message):
        from seahorse_t5x.model.t5x_models import LabelScoringModel  # noqa: F401
    with pytest.raises(ImportError, match=message):
        module.label_scoring_model(object())
    assert not hasattr(module, "NoSuchThing")


# --------------------------------------------------------------------------- with T5X installed


def _tiny_t5x_model():
    """T5X's EncoderDecoderModel over a tiny `examples/t5/network` Transformer on the demo
    vocabulary, float32 (the network of gin/smoke/tiny.gin, smaller)."""
    seqio = pytest.importorskip("seqio")
    models = pytest.importorskip("t5x.models")
    network = pytest.importorskip("t5x.examples.t5.network")
    from t5x import adafactor

    from seahorse_t5x.formats import vocab

    config = network.T5Config(
        vocab_size=3072,
        dtype="float32",
        emb_dim=32,
        num_heads=2,
        num_encoder_layers=2,
        num_decoder_layers=2,
        head_dim=16,
        mlp_dim=64,
        mlp_activations=("gelu", "linear"),
        dropout_rate=0.0,
        logits_via_embedding=False,
    )
    vocabulary = seqio.SentencePieceVocabulary(vocab.demo_vocab_path())
    return models.EncoderDecoderModel(
        module=network.Transformer(config),
        input_vocabulary=vocabulary,
        output_vocabulary=vocabulary,
        optimizer_def=adafactor.Adafactor(),
    )


@pytest.mark.slow
def test_label_scoring_model_on_a_tiny_t5x_network():
    pytest.importorskip("t5x")
    import jax

    from seahorse_t5x.formats import vocab

    base = _tiny_t5x_model()
    scoring = t5x_models.label_scoring_model(base, score_aux=True)
    assert isinstance(scoring, t5x_models.LabelScoringModel)
    assert (
        scoring.module is base.module
        and scoring.FEATURE_CONVERTER_CLS is base.FEATURE_CONVERTER_CLS
    )
    yes, no = vocab.label_token_ids(base.output_vocabulary)
    assert scoring.label_ids == (yes, no) and scoring.answer_words == ("1", "0")

    rng = np.random.default_rng(1)
    batch = {
        "encoder_input_tokens": rng.integers(2, 3000, size=(3, 12)).astype(np.int32),
        "decoder_input_tokens": np.array([[0, yes]] * 3, np.int32),
        "decoder_target_tokens": np.array([[yes, 1]] * 3, np.int32),
        "decoder_loss_weights": np.ones((3, 2), np.int32),
    }
    batch["encoder_input_tokens"][2, 8:] = 0  # padding
    shapes = {k: v.shape for k, v in batch.items()}
    params = base.get_initial_variables(jax.random.PRNGKey(0), shapes)["params"]

    logits = np.asarray(base._compute_logits(params, batch))
    expected = _numpy_two_way(logits[:, 0], yes, no)
    scores, aux = scoring.score_batch(params, batch)
    np.testing.assert_allclose(np.asarray(scores), expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(aux["log_p_no"]), expected[:, 1], atol=1e-6)
    # T5X's own score is log P('1' EOS) over the whole vocabulary: another number.
    whole = np.asarray(base.score_batch(params, batch))
    assert np.abs(whole - expected[:, 0]).max() > 0.1
    # Without the aux value: the scores alone, as t5x.eval's score metrics take them.
    plain = t5x_models.label_scoring_model(base).score_batch(params, batch)
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(scores))
    # With intermediates: T5X's, plus the two-way log-probabilities.
    again, intermediates = scoring.score_batch(params, batch, return_intermediates=True)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(scores))
    (both,) = intermediates["decoder"]["label_log_probs"]
    np.testing.assert_allclose(np.asarray(both), expected, atol=1e-6)
    # Answer words of an ICE task: their first pieces (two the demo vocabulary tells apart).
    ice = t5x_models.label_scoring_model(base, answer_words="si,no")
    assert ice.label_ids == vocab.answer_token_ids(base.output_vocabulary, ("si", "no"))
    assert len(set(ice.label_ids)) == 2


def test_ice_answer_words_are_the_ice_settings_words(monkeypatch):
    # What the ICE experiment gins hand to label_scoring_model: the words the prompts ask for.
    from seahorse_t5x.formats import ice_format

    monkeypatch.delenv(ice_format.ENV_ANSWER_WORDS, raising=False)
    assert ice_format.answer_words() == ("Yes", "No")
    monkeypatch.setenv(ice_format.ENV_ANSWER_WORDS, "Ja,Nein")
    assert ice_format.answer_words() == ("Ja", "Nein")
