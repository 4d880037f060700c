"""scripts/bench_score.py's CTranslate2 peer: the converted model gives HF's P(yes)."""

from __future__ import annotations

import numpy as np
import pytest
import scripts_testing
from mt5_fixtures import hf_tiny_model

from seahorse_t5x import constants

ctranslate2 = pytest.importorskip("ctranslate2")  # the `bench` and `test` extras


@pytest.fixture(scope="module")
def bench():
    yield from scripts_testing.loaded_script("bench_score")


def test_ctranslate2_float32_gives_hf_p_yes_and_int8_stays_close(bench, tmp_path):
    model = hf_tiny_model(seed=3)
    # transformers 5 ties mT5's logits without rescaling them; the converter must not scale.
    model.config.tie_word_embeddings = True
    rng = np.random.default_rng(0)
    tokens = []
    for length in (5, 40, 1100, 17):  # one past CTranslate2's default 1024-token cut
        ids = rng.integers(3, model.config.vocab_size, size=length).astype(np.int32)
        ids[-1] = constants.EOS_ID
        tokens.append(ids)
    hf, _ = bench.HFScorer(model, batch_size=2).score(tokens)
    vocabulary = bench.convert_to_ct2(model, str(tmp_path))
    assert model.config.tie_word_embeddings  # restored
    assert len(vocabulary.tokens) == model.config.vocab_size
    full = bench.CT2Scorer(str(tmp_path), vocabulary, "float32", batch=2).score(tokens)
    np.testing.assert_allclose(full, hf, atol=1e-5)
    assert np.ptp(hf) > 1e-3  # the inputs' scores differ: a wrong mapping would show
    int8 = bench.CT2Scorer(str(tmp_path), vocabulary, "int8", batch=2).score(tokens)
    assert not np.array_equal(int8, full) and np.max(np.abs(int8 - full)) < 0.2
