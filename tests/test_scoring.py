"""The inference path against HF PyTorch, its inputs against the SeqIO preprocessors, and the
`score` command (order, pass-through fields, bad rows)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json

import numpy as np
import pytest
from mt5_fixtures import save_hf_tiny

from seahorse_t5x import cli, constants, errors
from seahorse_t5x.formats import vocab
from seahorse_t5x.inference import batching, engine, input_rows, inputs, settings
from seahorse_t5x.inference import resume as resume_lib
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.model import configs

MAX_LEN = 64  # buckets 32, 48, 64: few compiled shapes

ARTICLES = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Heavy rain flooded several streets in the old town. " * 6,
    "A local team won the regional cup.",
    "Scientists reported a new species of frog found in the mountains near the river, "
    "where the forest is dense and the nights are cold. " * 3,
    "Prices rose.",
]
SUMMARIES = [
    "The budget was approved.",
    "Rain flooded the streets of the old town.",
    "A team won a cup.",
    "A new frog species was found.",
    "Prices went up sharply this month in most shops across the country.",
]


@pytest.fixture(autouse=True)
def _compilation_cache_in_tmp(tmp_path_factory, monkeypatch):
    # `score` caches compiled programs in the user's cache folder by default; not in tests.
    cache = tmp_path_factory.getbasetemp() / "xla_cache"
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", str(cache))


@pytest.fixture(scope="module")
def demo_vocab():
    return vocab.get_vocabulary("demo")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("scoring_model")
    model = save_hf_tiny(directory, "safetensors", seed=11)
    return directory, model


@pytest.fixture(scope="module")
def scorer(model_dir, demo_vocab):
    return scorer_lib.Scorer(model_dir[0], vocab=demo_vocab, input_length=MAX_LEN, batch_size=2)


def _hf_p_yes(model, tokens, yes_id, no_id):
    import torch

    batch = np.zeros((len(tokens), max(len(t) for t in tokens)), np.int64)
    for row, ids in enumerate(tokens):
        batch[row, : len(ids)] = ids
    with torch.no_grad():
        logits = model(
            input_ids=torch.tensor(batch),
            attention_mask=torch.tensor(batch != 0).long(),
            decoder_input_ids=torch.zeros((len(tokens), 1), dtype=torch.long),
        ).logits[:, 0, [yes_id, no_id]]
    return torch.softmax(logits.double(), dim=-1)[:, 0].numpy()


def test_p_yes_matches_pytorch_in_input_order(scorer, model_dir):
    encoded = scorer.encode(ARTICLES, SUMMARIES)
    lengths = [len(t) for t in encoded.tokens]
    assert max(lengths) == MAX_LEN and min(lengths) < 32  # several buckets, one cut
    assert all(t[-1] == constants.EOS_ID for t in encoded.tokens)
    ours = scorer.score(ARTICLES, SUMMARIES)
    theirs = _hf_p_yes(model_dir[1], encoded.tokens, scorer.yes_id, scorer.no_id)
    assert ours.shape == (5,) and ours.dtype == np.float64
    np.testing.assert_allclose(ours, theirs, atol=1e-4)
    # Input order: scoring a permutation permutes the scores.
    order = [3, 0, 4, 2, 1]
    permuted = scorer.score([ARTICLES[i] for i in order], [SUMMARIES[i] for i in order])
    np.testing.assert_allclose(permuted, ours[order], atol=1e-6)


# bfloat16 products round each operand to 8 bits of mantissa; what that moves P(yes) by on
# a trained model is measured in docs/scoring.md and held in tests/test_demo.py.
BF16_P_YES_TOLERANCE = 0.02


@pytest.mark.parametrize("param_dtype", ["float32", "bfloat16"])
def test_bfloat16_p_yes_is_within_its_tolerance_of_pytorch(model_dir, demo_vocab, param_dtype):
    half = scorer_lib.Scorer(
        model_dir[0],
        vocab=demo_vocab,
        input_length=MAX_LEN,
        batch_size=2,
        dtype="bfloat16",
        param_dtype=param_dtype,
    )
    assert half.config.dtype == "bfloat16"
    wi = half.params["encoder"]["layers"]["layer"]["mlp"]["wi_0"]["kernel"]
    assert wi.dtype == param_dtype
    encoded = half.encode(ARTICLES, SUMMARIES)
    theirs = _hf_p_yes(model_dir[1], encoded.tokens, half.yes_id, half.no_id)
    ours = half.score(ARTICLES, SUMMARIES)
    assert np.max(np.abs(ours - theirs)) < BF16_P_YES_TOLERANCE
    assert not np.allclose(ours, theirs, atol=1e-6, rtol=0)  # it did compute in bfloat16


def test_bucketed_equals_unbucketed(scorer):
    tokens = scorer.encode(ARTICLES, SUMMARIES).tokens
    bucketed = scorer.score_tokens(tokens)
    padded = scorer.score_tokens(tokens, bucketed=False)
    np.testing.assert_allclose(bucketed, padded, atol=1e-5)


def test_plan_batches_covers_each_example_once_with_fixed_shapes():
    lengths = [5, 64, 33, 31, 47, 49, 12, 64, 2]
    batches = batching.plan_batches(
        lengths, batching.bucket_lengths(64, "1.4"), tokens_per_batch=128
    )
    seen = np.concatenate([b.indices for b in batches])
    assert sorted(seen.tolist()) == list(range(len(lengths)))
    shapes = [(b.rows, b.length) for b in batches]
    # Longest first: 64, 64 | 49, 47 (bucket 64) | 33, 31 (bucket 48) | 12, 5, 2 (bucket 32,
    # 4 rows: 3 left, rounded up to a power of two).
    assert shapes == [(2, 64), (2, 64), (2, 48), (4, 32)]
    assert [sorted(lengths[i] for i in b.indices) for b in batches] == [
        [64, 64],
        [47, 49],
        [31, 33],
        [2, 5, 12],
    ]
    tail = batching.plan_batches(
        [3, 4, 5], batching.bucket_lengths(64, "1.4"), tokens_per_batch=1024
    )
    assert [(b.rows, b.length) for b in tail] == [(4, 32)]
    for b in batches:
        assert all(lengths[i] <= b.length for i in b.indices)
        assert len(b.indices) <= b.rows
    with pytest.raises(errors.UserError, match="exceeds"):
        batching.plan_batches([65], batching.bucket_lengths(64), 128)
    assert batching.bucket_lengths(100, "1.4") == (32, 48, 64, 96, 100)
    assert batching.bucket_lengths(100) == (32, 40, 48, 56, 64, 80, 96, 100)  # the default
    assert batching.bucket_lengths(100, "2") == (32, 64, 100)


def _layout(plan) -> list[tuple[int, int, list[int]]]:
    return [(b.rows, b.length, b.indices.tolist()) for b in plan]


def _padded_tokens(rows: int, length: int) -> float:
    return rows * length


def _cost_with_compiles(lengths, buckets, compile_cost, tokens_per_batch):
    batches = batching.plan_batches(lengths, buckets, tokens_per_batch)
    shapes = {(b.rows, b.length) for b in batches}
    return sum(b.rows * b.length for b in batches) + compile_cost * len(shapes)


def test_buckets_worth_compiling_is_the_cheapest_subset_of_the_ladder():
    ladder = batching.bucket_lengths(256, "1.2")  # 15 lengths, 32 ... 256
    coarser = (batching.bucket_lengths(256, "1.4"), batching.bucket_lengths(256, "2"))  # as plan
    kw = dict(tokens_per_batch=512, row_multiple=1, batch_cost=_padded_tokens, starts=coarser)
    for seed in (0, 1):
        lengths = np.random.default_rng(seed).integers(20, 257, 40).tolist()
        fine = batching.plan_batches(lengths, ladder, 512)
        # Compiling free: the plan is the whole ladder's.
        free = batching.buckets_worth_compiling(lengths, ladder, compile_cost=0.0, **kw)
        assert _layout(batching.plan_batches(lengths, free, 512)) == _layout(fine)
        # Compiling dearer than any padding: every input padded to the length that takes all.
        dear = batching.buckets_worth_compiling(lengths, ladder, compile_cost=1e9, **kw)
        assert {(b.rows, b.length) for b in batching.plan_batches(lengths, dear, 512)} == {(2, 256)}
        # In between: as cheap as the best of all 2**14 subsets (the top length kept), each
        # planned and costed here.
        chosen = batching.buckets_worth_compiling(lengths, ladder, compile_cost=600.0, **kw)
        subsets = itertools.chain.from_iterable(
            itertools.combinations(ladder[:-1], k) for k in range(len(ladder))
        )
        best = min(_cost_with_compiles(lengths, s + (256,), 600.0, 512) for s in subsets)
        assert _cost_with_compiles(lengths, chosen, 600.0, 512) == best
        shapes = {(b.rows, b.length) for b in batching.plan_batches(lengths, chosen, 512)}
        assert 1 < len(shapes) < len({(b.rows, b.length) for b in fine})


def test_the_auto_ladder_pads_a_small_job_up_on_a_cpu_by_its_lengths_alone():
    config = configs.get_config("small")
    auto = engine.Engine(config, (333, 334), max_input_length=2048)
    fine = engine.Engine(config, (333, 334), max_input_length=2048, ladder="1.2")
    assert auto.ladder == batching.DEFAULT_LADDER == "auto"
    assert auto.product_rates() == batching.CPU_PRODUCT_RATES["float32"]
    assert fine.product_rates() is None
    rng = np.random.default_rng(1)
    lengths = np.clip(np.exp(rng.normal(np.log(450), 0.8, 64)).astype(int), 100, 2048).tolist()

    def padded(plan) -> dict[int, int]:  # input -> its padded length
        return {int(i): b.length for b in plan for i in b.indices}

    auto_plan, fine_plan = auto.plan(lengths), fine.plan(lengths)
    expected = batching.plan_batches(lengths, fine.buckets, fine.tokens_per_batch, fine.data_size)
    assert _layout(fine_plan) == _layout(expected)
    assert len(auto.shapes(lengths)) < len(fine.shapes(lengths))
    assert sorted(np.concatenate([b.indices for b in auto_plan]).tolist()) == list(range(64))
    assert all(padded(auto_plan)[i] >= lengths[i] for i in range(64))
    tokens = [sum(b.rows * b.length for b in plan) for plan in (auto_plan, fine_plan)]
    assert tokens[0] > tokens[1]  # fewer shapes, more padding

    # The quicker plan by the engine's own measure, compiles counted.
    def seconds(plan) -> float:
        rates = auto.product_rates()
        batches = sum(batching.batch_seconds(config, rates, b.rows, b.length) for b in plan)
        return batches + batching.CPU_COMPILE_SECONDS * len({(b.rows, b.length) for b in plan})

    assert seconds(auto_plan) < seconds(fine_plan)
    # The plan is a function of the lengths, not of their order (nor of what is compiled).
    order = rng.permutation(64)
    shuffled = padded(auto.plan([lengths[i] for i in order]))
    assert all(shuffled[k] == padded(auto_plan)[int(i)] for k, i in enumerate(order))
    # Many inputs: nearly every bucket's shape pays for itself.
    many = np.clip(np.exp(rng.normal(np.log(450), 0.8, 4096)).astype(int), 100, 2048).tolist()
    products = [
        sum(sum(batching.scoring_flops(config, b.rows, b.length)) for b in e.plan(many))
        for e in (auto, fine)
    ]
    assert products[1] <= products[0] <= 1.01 * products[1]
    # Compiling a negligible share of the job: the ladder as it is.
    rates = auto.product_rates()
    cost = functools.partial(batching.batch_seconds, config, rates)
    assert batching.buckets_worth_compiling(many, fine.buckets, 2048, 1, cost, 1e-3) == fine.buckets


def test_scoring_flops_and_seconds_count_the_encoder_by_hand():
    config = configs.get_config("small")  # 8 layers, 6 heads of 64, width 512, MLP 1024
    dense, attention = batching.scoring_flops(config, 2, 100)
    assert dense == 8 * 2 * 100 * 2 * (4 * 512 * 384 + 3 * 512 * 1024)
    assert attention == 8 * 2 * 100 * 2 * 2 * 100 * 384
    assert batching.batch_seconds(config, (1e9, 1e8), 2, 100) == dense / 1e9 + attention / 1e8


def test_build_inputs_docstring_example():
    ids, dropped, cut = inputs.build_inputs([5], [7, 8, 9, 10], [6, 11, 12], 7, "keep_summary")
    assert ids.tolist() == [5, 7, 8, 6, 11, 12, 1] and dropped == 2 and not cut
    ids, dropped, cut = inputs.build_inputs([5], [7, 8, 9, 10], [6, 11, 12], 7, "right")
    assert ids.tolist() == [5, 7, 8, 9, 10, 6, 1] and dropped == 0 and cut


@pytest.mark.parametrize("truncation", ["keep_summary", "right"])
@pytest.mark.parametrize("question", [None, 4])
def test_inputs_equal_the_seqio_preprocessors(demo_vocab, truncation, question):
    import seqio
    import tensorflow as tf

    from seahorse_t5x import constants
    from seahorse_t5x.tasks import preprocessors

    features = {
        "inputs": seqio.Feature(demo_vocab, add_eos=True),
        "targets": seqio.Feature(demo_vocab, add_eos=True),
    }
    data = {"premise": ARTICLES, "hypothesis": SUMMARIES, "label": [1, 0, 1, 0, 1]}
    if question is not None:
        data["question_prompt"] = [constants.QUESTION_PROMPTS[question]] * len(ARTICLES)
    ds = tf.data.Dataset.from_tensor_slices(data)
    lengths = {"inputs": 40, "targets": 4}
    ds = preprocessors.constant_yes_targets(ds)
    ds = preprocessors.tokenize_premise_hypothesis(
        ds, output_features=features, multi_question=question is not None
    )
    ds = preprocessors.truncate_inputs(ds, sequence_length=lengths, truncation=truncation)
    ds = seqio.preprocessors.append_eos_after_trim(
        ds, output_features=features, sequence_length=lengths
    )
    expected = list(ds.as_numpy_iterator())
    ours = inputs.encode_pairs(demo_vocab, ARTICLES, SUMMARIES, 40, truncation, question)
    assert ours.article_tokens_dropped.sum() > 0
    for i, ex in enumerate(expected):
        assert ours.tokens[i].tolist() == ex["inputs"].tolist(), i
        assert ours.article_tokens_dropped[i] == ex["article_tokens_dropped"]
        assert ours.summary_truncated[i] == bool(ex["summary_truncated"])


def test_scorer_rejects_bad_settings(model_dir, demo_vocab):
    with pytest.raises(errors.UserError, match="float16"):
        scorer_lib.Scorer(model_dir[0], vocab=demo_vocab, dtype="float16")
    with pytest.raises(errors.UserError, match="truncation"):
        scorer_lib.Scorer(model_dir[0], vocab=demo_vocab, truncation="left")
    with pytest.raises(errors.UserError, match="question"):
        inputs.encode_pairs(demo_vocab, ["a"], ["b"], 64, question=9)


def test_vocab_defaults_to_the_checkpoints_spiece_model(tmp_path, monkeypatch, model_dir):
    import shutil

    for name in ("config.json", "model.safetensors"):
        shutil.copy(model_dir[0] / name, tmp_path / name)
    shutil.copy(vocab.demo_vocab_path(), tmp_path / "spiece.model")
    monkeypatch.delenv("SEAHORSE_VOCAB", raising=False)
    scorer = scorer_lib.Scorer(tmp_path, input_length=MAX_LEN)
    assert scorer.vocab.sentencepiece_model_file == str(tmp_path / "spiece.model")
    assert (scorer.yes_id, scorer.no_id) == (3, 4)


# --- the `score` command -----------------------------------------------------------------


def _write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _score_cli(model_dir, input_path, output_path, *extra):
    return cli.main(
        [
            "score",
            "--checkpoint",
            str(model_dir),
            "--vocab",
            "demo",
            "--input",
            str(input_path),
            "--output",
            str(output_path),
            "--input_length",
            str(MAX_LEN),
            "--batch_size",
            "2",
            *extra,
        ]
    )


def test_score_cli_keeps_order_and_pass_through_fields(tmp_path, model_dir, scorer, capsys):
    rows = [
        {"gem_id": f"id{i}", "article": a, "summary": s, "extra": {"n": i}}
        for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES, strict=True))
    ]
    _write_jsonl(tmp_path / "pairs.jsonl", rows)
    assert _score_cli(model_dir[0], tmp_path / "pairs.jsonl", tmp_path / "out.jsonl") == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [w["gem_id"] for w in written] == [f"id{i}" for i in range(5)]
    assert [w["extra"] for w in written] == [{"n": i} for i in range(5)]
    np.testing.assert_allclose(
        [w["score"] for w in written], scorer.score(ARTICLES, SUMMARIES), atol=1e-6
    )
    out = capsys.readouterr().out
    assert "scored 5 rows (0 bad, 2 with truncated articles" in out


def test_score_cli_reads_tsv(tmp_path, model_dir, scorer):
    lines = ["gem_id\tarticle\tsummary"] + [
        f"t{i}\t{a}\t{s}" for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES, strict=True))
    ]
    (tmp_path / "pairs.tsv").write_text("\n".join(lines) + "\n")
    assert _score_cli(model_dir[0], tmp_path / "pairs.tsv", tmp_path / "out.jsonl") == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [w["gem_id"] for w in written] == [f"t{i}" for i in range(5)]
    np.testing.assert_allclose(
        [w["score"] for w in written], scorer.score(ARTICLES, SUMMARIES), atol=1e-6
    )


def test_score_input_tables_read_quotes_as_tsv_and_csv_write_them(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text('article\tsummary\nAn article.\t"Yes," he said.\n', encoding="utf-8")
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_text('article,summary\nAn article.,"""Yes,"" he said."\n', encoding="utf-8")
    for path in (tsv, csv_path):
        rows = list(input_rows.records(path))
        assert rows == [(2, {"article": "An article.", "summary": '"Yes," he said.'}, None)]


BAD_ROWS = [
    {"article": ARTICLES[0], "summary": SUMMARIES[0], "k": 1},
    "{not json",
    {"article": ARTICLES[1]},
    {"article": ARTICLES[2], "summary": 7},
    {"article": ARTICLES[3], "summary": "   "},
    "[1, 2]",
    {"article": ARTICLES[4], "summary": SUMMARIES[4], "k": 7},
]


def test_score_cli_bad_rows_are_an_error_listing_lines(tmp_path, model_dir, capsys):
    _write_jsonl(tmp_path / "pairs.jsonl", BAD_ROWS)
    assert _score_cli(model_dir[0], tmp_path / "pairs.jsonl", tmp_path / "out.jsonl") == 2
    err = capsys.readouterr().err
    assert "5 bad rows" in err
    assert "line 2: not valid JSON" in err
    assert "line 3: missing field 'summary'" in err
    assert "line 4: field 'summary' must be a string, got int" in err
    assert "line 5: empty summary" in err
    assert "line 6: expected a JSON object, got list" in err
    assert "--skip_bad_rows" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_score_cli_skip_bad_rows_writes_null_scores(tmp_path, model_dir, scorer, capsys):
    _write_jsonl(tmp_path / "pairs.jsonl", BAD_ROWS)
    code = _score_cli(
        model_dir[0], tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", "--skip_bad_rows"
    )
    assert code == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(written) == 7
    assert [w["score"] is None for w in written] == [False, True, True, True, True, True, False]
    assert written[1] == {"line": 2, "score": None, "error": written[1]["error"]}
    assert written[2]["error"] == "missing field 'summary'"
    assert written[0]["k"] == 1 and written[6]["k"] == 7
    expected = scorer.score([ARTICLES[0], ARTICLES[4]], [SUMMARIES[0], SUMMARIES[4]])
    np.testing.assert_allclose([written[0]["score"], written[6]["score"]], expected, atol=1e-6)
    assert "scored 2 rows (5 bad" in capsys.readouterr().out


@pytest.mark.slow
def test_score_cli_label_words_choose_the_answer_tokens(tmp_path, model_dir, demo_vocab):
    words = ("council", "rain")
    ids = vocab.answer_token_ids(demo_vocab, words)
    assert ids != vocab.label_token_ids(demo_vocab) and ids[0] != ids[1]
    scorer = scorer_lib.Scorer(
        model_dir[0], vocab=demo_vocab, input_length=MAX_LEN, batch_size=2, label_words=words
    )
    assert (scorer.yes_id, scorer.no_id) == ids
    rows = [{"article": a, "summary": s} for a, s in zip(ARTICLES, SUMMARIES, strict=True)]
    _write_jsonl(tmp_path / "pairs.jsonl", rows)
    code = _score_cli(
        model_dir[0],
        tmp_path / "pairs.jsonl",
        tmp_path / "out.jsonl",
        "--label_words",
        "council,rain",
    )
    assert code == 0
    written = [
        json.loads(line)["score"] for line in (tmp_path / "out.jsonl").read_text().splitlines()
    ]
    encoded = scorer.encode(ARTICLES, SUMMARIES)
    theirs = _hf_p_yes(model_dir[1], encoded.tokens, *ids)
    np.testing.assert_allclose(written, theirs, atol=1e-4)
    np.testing.assert_allclose(written, scorer.score(ARTICLES, SUMMARIES), atol=1e-6)


def test_score_cli_resume_refuses_another_dtype_and_auto_resumes_its_choice(
    tmp_path, model_dir, scorer, capsys
):
    rows = [{"article": a, "summary": s} for a, s in zip(ARTICLES, SUMMARIES, strict=True)]
    pairs, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(pairs, rows)
    # An interrupted float32 run that wrote its first chunk of 2 rows.
    chosen = settings.ScoringSettings(vocab="demo", input_length=MAX_LEN, batch_size=2)
    record = resume_lib.RunRecord.of(
        pairs,
        model_dir[0],
        dataclasses.replace(chosen, dtype="float32"),
        prompt=None,
        chunk_size=2,
        skip_bad_rows=False,
    ).to_json()
    assert record["dtype"] == "float32" and record["max_input_length"] == MAX_LEN
    expected = scorer.score(ARTICLES, SUMMARIES)
    written = [
        json.dumps({**r, "score": float(p)}) + "\n" for r, p in zip(rows, expected, strict=True)
    ]
    (tmp_path / "out.jsonl.partial").write_text("".join(written[:2]))
    (tmp_path / "out.jsonl.partial.run.json").write_text(json.dumps(record))
    resume = ["--chunk_size", "2", "--resume"]
    assert _score_cli(model_dir[0], pairs, out, *resume, "--dtype", "bfloat16") == 2
    assert "written with other settings (dtype was float32)" in capsys.readouterr().err
    assert not out.exists()
    # `auto` on a CPU chooses float32: the same run, continued.
    assert _score_cli(model_dir[0], pairs, out, *resume) == 0
    assert "resumed after 2 rows" in capsys.readouterr().out
    scores = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    np.testing.assert_allclose(scores, expected, atol=1e-6)


def test_label_words_are_recorded_in_one_spelling_so_a_resume_matches(tmp_path, model_dir, capsys):
    words = "council, rain"
    # However the words are spaced, a run records them one way.
    for given in (words, "council,rain", ("council ", " rain")):
        assert settings.label_words_text(given) == "council,rain"
    given = settings.ScoringSettings(vocab="demo", input_length=MAX_LEN, batch_size=2)
    rows = [{"article": a, "summary": s} for a, s in zip(ARTICLES, SUMMARIES, strict=True)]
    pairs, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(pairs, rows)
    spaced = dataclasses.replace(given, dtype="float32", label_words=words)
    record = resume_lib.RunRecord.of(
        pairs, model_dir[0], spaced, prompt=None, chunk_size=2, skip_bad_rows=False
    ).to_json()
    assert record["label_words"] == "council,rain"
    scorer = scorer_lib.Scorer(
        model_dir[0],
        vocab="demo",
        input_length=MAX_LEN,
        batch_size=2,
        label_words=("council", "rain"),
    )
    expected = scorer.score(ARTICLES, SUMMARIES)
    written = [
        json.dumps({**r, "score": float(p)}) + "\n" for r, p in zip(rows, expected, strict=True)
    ]
    # The record of an interrupted run that kept the words as they were typed.
    (tmp_path / "out.jsonl.partial").write_text("".join(written[:2]))
    (tmp_path / "out.jsonl.partial.run.json").write_text(
        json.dumps({**record, "label_words": words})
    )
    resume = ["--chunk_size", "2", "--resume", "--label_words", words]
    assert _score_cli(model_dir[0], pairs, out, *resume) == 0
    scores = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    # The finished output's fingerprint matches the same words spaced another way.
    again = ["--chunk_size", "2", "--resume", "--label_words", "council,rain"]
    assert _score_cli(model_dir[0], pairs, out, *again) == 0
    assert "is already complete" in capsys.readouterr().out
