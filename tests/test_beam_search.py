"""Beam search with the key/value cache (`decoding.beam_search`, `Generator(num_beams=)`)
against HF `generate(num_beams=k, do_sample=False)`, token for token."""

from __future__ import annotations

import numpy as np
import pytest
import test_decoding

from seahorse_t5x import errors
from seahorse_t5x.inference import generation
from seahorse_t5x.model import decoding

MAX_LENGTH = 12
# EOS's logit row is the one of a frequent token, scaled up this much (`test_decoding`'s
# writer scales it by 1.01): EOS is often among a step's best candidates, so hypotheses
# finish at many lengths, rows end by EOS and by length, and some rows are decided (every
# finished slot filled, no running beam able to beat them) before `MAX_LENGTH`.
EOS_SCALE = 1.6


def _hf_model_ending_often():
    import torch

    model = test_decoding._hf_model_writing_text()
    with torch.no_grad():
        head = model.lm_head.weight
        head[decoding.EOS_ID] = head[test_decoding.EOS_LIKE] * EOS_SCALE
    return model


@pytest.fixture(scope="module")
def hf_and_generator(tmp_path_factory):
    """The torch model and a `Generator` of the checkpoint it saved."""
    model = _hf_model_ending_often()
    directory = tmp_path_factory.mktemp("hf_beams")
    model.save_pretrained(directory)
    generator = generation.Generator(
        directory, vocab="demo", input_length=64, max_output_length=MAX_LENGTH, batch_size=4,
        dtype="float32",
    )  # fmt: skip
    return model, generator


def _inputs(lengths: list[int], seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [
        [int(t) for t in rng.integers(2, 3000, size=n - 1)] + [decoding.EOS_ID] for n in lengths
    ]


def _padded(inputs: list[list[int]]) -> np.ndarray:
    tokens = np.zeros((len(inputs), max(len(ids) for ids in inputs)), np.int32)
    for row, ids in enumerate(inputs):
        tokens[row, : len(ids)] = ids
    return tokens


def _hf_beams(model, inputs: list[list[int]], num_beams: int, **options) -> list[list[int]]:
    """HF's best hypothesis of each row, as `strip` writes ours: the tokens before EOS.

    HF's rows start with the decoder start id, and after EOS hold EOS again (beam search
    fills with `pad_token_id or eos_token_id`, and the pad id is 0)."""
    import torch

    tokens = _padded(inputs)
    with torch.no_grad():
        out = model.generate(
            input_ids=torch.tensor(tokens),
            attention_mask=torch.tensor(tokens != 0).long(),
            max_new_tokens=MAX_LENGTH,
            do_sample=False,
            num_beams=num_beams,
            **options,
        ).numpy()
    assert (out[:, 0] == decoding.DECODER_START_ID).all()
    return decoding.strip(out[:, 1:])


def _ours(generator, inputs: list[list[int]], num_beams: int, length_penalty: float):
    program = decoding.compiled_beam_search(
        generator.config, MAX_LENGTH, num_beams, length_penalty=length_penalty
    )
    return decoding.strip(program(generator.params, _padded(inputs)))


@pytest.mark.parametrize("num_beams", [2, 4])
def test_beams_equal_hf_generate_token_for_token(hf_and_generator, num_beams):
    model, generator = hf_and_generator
    # Lengths over several buckets (32, 48, 64), in no order.
    inputs = _inputs([40, 5, 64, 17, 33, 2, 50, 9, 21, 12], seed=0)
    ours = generator.generate_ids(inputs, num_beams=num_beams)
    assert ours == _hf_beams(model, inputs, num_beams)
    # Some rows end with EOS before the limit, some run to it: both paths are covered.
    lengths = sorted(len(row) for row in ours)
    assert lengths[0] < MAX_LENGTH and lengths[-1] == MAX_LENGTH
    # The beams matter: some rows differ from greedy decoding's.
    greedy = generator.generate_ids(inputs)
    assert sum(b != g for b, g in zip(ours, greedy, strict=True)) >= 2


@pytest.mark.parametrize(("num_beams", "length_penalty"), [(4, 0.6), (2, 2.0)])
def test_a_length_penalty_equals_hf(hf_and_generator, num_beams, length_penalty):
    model, generator = hf_and_generator
    inputs = _inputs([7, 12, 3, 9, 20, 5, 16, 11, 24, 14], seed=1)
    ours = _ours(generator, inputs, num_beams, length_penalty)
    assert ours == _hf_beams(model, inputs, num_beams, length_penalty=length_penalty)
    # The penalty matters: some rows differ from the default's (1.0).
    assert ours != _ours(generator, inputs, num_beams, 1.0)


def test_a_decided_row_keeps_its_finished_hypotheses(hf_and_generator):
    """HF's `early_stopping=False` rule: once a row's finished hypotheses fill its beams and
    its best running beam's score over the current length ** length_penalty is no better
    than the worst of them, no later hypothesis joins them, even one that would score
    better (HF's `early_stopping="never"` lets them in: some rows differ)."""
    model, generator = hf_and_generator
    inputs = _inputs([7, 12, 3, 9, 20, 5, 16, 11, 24, 14], seed=1)
    ours = _ours(generator, inputs, 2, 2.0)
    assert ours == _hf_beams(model, inputs, 2, length_penalty=2.0)
    assert ours != _hf_beams(model, inputs, 2, length_penalty=2.0, early_stopping="never")


def test_a_bad_beam_count_is_refused_in_one_line(hf_and_generator):
    _, generator = hf_and_generator
    for bad in (0, -2, 1.5, True):
        with pytest.raises(errors.UserError, match="num_beams must be a positive integer"):
            generator.generate_ids([[5, decoding.EOS_ID]], num_beams=bad)


def _one_step(running_scores, log_probs, *, finished_scores=None, max_length=5):
    """`decoding._advance_beams` at position 1 of one row (length penalty 1.0: a hypothesis
    ending there is divided by 2), from beams scoring `running_scores`."""
    import jax.numpy as jnp

    beams = decoding._Beams.start(1, len(running_scores), max_length)
    beams = beams._replace(running_scores=jnp.asarray([running_scores], jnp.float32))
    if finished_scores is not None:
        beams = beams._replace(
            finished_scores=jnp.asarray([finished_scores], jnp.float32),
            is_finished=jnp.ones((1, len(finished_scores)), bool),
        )
    penalties = jnp.arange(1, max_length + 1, dtype=jnp.float32)
    scores = jnp.asarray([log_probs], jnp.float32)
    return decoding._advance_beams(beams, scores, jnp.int32(1), 1, max_length, penalties)


def test_a_step_keeps_every_beam_running_when_stops_take_the_first_candidates():
    """HF keeps the best 2 * num_beams candidates: when the first num_beams of them end in
    EOS (id 1), the next num_beams still run on. Sums (beam score + log-prob): beam 0's EOS
    -2, beam 1's EOS -2.5, beam 0's token 2 -3, beam 1's token 3 -3.5."""
    state, sources = _one_step(
        [-1.0, -2.0], [[-20.0, -1.0, -2.0, -25.0], [-21.0, -0.5, -26.0, -1.5]]
    )
    assert state.running_scores.tolist() == [[-3.0, -3.5]]
    assert state.running[0, :, 1].tolist() == [2, 3] and sources.tolist() == [[0, 1]]
    # Both EOS hypotheses finished, scored sum / 2.
    assert state.finished_scores.tolist() == [[-1.0, -1.25]]
    assert state.finished[0, :, 1].tolist() == [1, 1] and state.is_finished.all()
    # The best running beam (-3 / 2) cannot beat the worst finished one (-1.25).
    assert state.undecided.tolist() == [False]


def test_a_row_whose_best_beam_only_ties_its_worst_finished_one_is_decided():
    """HF's rule: a row stays open only while its best running beam's score over
    length ** length_penalty is strictly better than its worst finished hypothesis."""
    log_probs = [[-20.0, -30.0, -2.0, -25.0], [-21.0, -31.0, -26.0, -1.5]]
    tie, _ = _one_step([-1.0, -2.0], log_probs, finished_scores=[-1.0, -1.5])
    assert tie.running_scores[0, 0] / 2 == -1.5 and tie.undecided.tolist() == [False]
    better, _ = _one_step([-1.0, -2.0], log_probs, finished_scores=[-1.0, -1.6])
    assert better.undecided.tolist() == [True]


def test_only_stops_among_the_first_num_beams_candidates_finish():
    """Three beams: the EOS candidates of beams 0 and 1 rank first and second and finish;
    beam 2's ranks fourth (after beam 0's token 2), outside the first three, so it neither
    finishes nor runs on, and the third finished slot stays empty."""
    state, sources = _one_step(
        [-1.0, -2.0, -2.2],
        [[-20.0, -1.0, -2.0, -25.0], [-21.0, -0.5, -26.0, -1.5], [-22.0, -1.0, -27.0, -1.6]],
    )
    assert state.finished_scores[0, :2].tolist() == [-1.0, -1.25]
    assert state.is_finished.tolist() == [[True, True, False]]
    assert state.finished_scores[0, 2] <= -1e8
    assert state.running_scores[0].tolist() == pytest.approx([-3.0, -3.5, -3.8])
    assert state.running[0, :, 1].tolist() == [2, 3, 3] and sources.tolist() == [[0, 1, 2]]
    assert state.undecided.tolist() == [True]
