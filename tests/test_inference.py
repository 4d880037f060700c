"""The one inference path: the same P(yes) from `score`, `evaluate` and training validation;
the same scores on every mesh; streaming output that a killed run resumes row for row;
output-path mistakes caught before scoring; checkpoints that say how they were trained."""

from __future__ import annotations

import functools
import json
import logging
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types

import jax
import numpy as np
import pytest
import runner_fixtures
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, errors
from seahorse_t5x.cli import inference_flags
from seahorse_t5x.formats import vocab
from seahorse_t5x.inference import batching, engine, inputs, placement, resume
from seahorse_t5x.inference import questions as questions_lib
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.inference import settings as settings_lib
from seahorse_t5x.model import configs, mt5, partitioning
from seahorse_t5x.runner import checkpointing, trainer

TESTS = pathlib.Path(__file__).resolve().parent

INPUT_LENGTH = 64
WORDS = (
    "the council approved a new budget after long debate rain flooded streets in old town "
    "team won regional cup scientists found frog species near river forest prices rose"
).split()


def _rows(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        article = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60))) + "."
        summary = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) + "."
        label = rng.randint(0, 1)
        rows.append(
            {
                "gem_id": f"xsum-test-{i}",
                "language": "en",
                "dataset": "xsum",
                "system": "t5_base",
                "summary": summary,
                "article": article,
                **{f"q{q}": label for q in range(1, 7)},
            }
        )
    return rows


def _write_jsonl(path: pathlib.Path, rows: list) -> None:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )


def _read_jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A runner MODEL_DIR (tiny random model, meta as `train` writes it) + a prepared split."""
    root = tmp_path_factory.mktemp("inference")
    config = configs.get_config("tiny", dropout_rate=0.0)
    # Device arrays, as the trainer saves them: orbax records the devices they were on.
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(5)))
    model_dir = root / "run"
    store = checkpointing.CheckpointStore(model_dir, keep=1)
    store.save(
        3,
        params,
        {"count": np.zeros((), np.int32)},
        {"step": 3, "batches_consumed": 3},
        {
            "model_config": config.to_dict(),
            "step": 3,
            "vocabulary": vocab.demo_vocab_path(),
            "task_feature_lengths": {"inputs": INPUT_LENGTH, "targets": 4},
        },
    )
    store.close()
    data_dir = root / "prepared"
    data_dir.mkdir()
    rows = _rows(24, seed=1)
    for split in ("train", "validation", "test"):
        _write_jsonl(data_dir / f"{split}.jsonl", rows)
    return types.SimpleNamespace(
        model_dir=model_dir, config=config, params=params, data_dir=data_dir, rows=rows
    )


@pytest.fixture
def seahorse_env(trained, monkeypatch):
    monkeypatch.setenv("SEAHORSE_DATA_DIR", str(trained.data_dir))
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", runner_fixtures.compilation_cache_dir())
    import seahorse_t5x.tasks  # noqa: F401


def _score(args: list[str]) -> int:
    return cli.main(["score", *args])


def test_score_evaluate_and_validation_give_the_same_p_yes(trained, seahorse_env, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    _write_jsonl(pairs, [{"article": r["article"], "summary": r["summary"]} for r in trained.rows])
    out = tmp_path / "scored.jsonl"
    assert _score(["--checkpoint", str(trained.model_dir), "--input", str(pairs)] + [
        "--output", str(out), "--batch_size", "4", "--chunk_size", "10"
    ]) == 0  # fmt: skip
    by_score = np.array([r["score"] for r in _read_jsonl(out)])

    eval_dir = tmp_path / "eval"
    assert cli.main(["evaluate", "--checkpoint", str(trained.model_dir)] + [
        "--tasks", "seahorse_q4_score", "--split", "test", "--output_dir", str(eval_dir),
        "--batch_size", "4"
    ]) == 0  # fmt: skip
    evaluated = _read_jsonl(eval_dir / "scores" / "seahorse_q4_score.jsonl")
    assert [r["gem_id"] for r in evaluated] == [r["gem_id"] for r in trained.rows]
    by_evaluate = np.array([r["score"] for r in evaluated])

    # Validation as the trainer runs it, on the same mesh and parameters.
    cfg = types.SimpleNamespace(
        task_feature_lengths={"inputs": INPUT_LENGTH, "targets": 4},
        validation_split="test",
        validation_max_examples=None,
        eval_batch_size=4,
    )
    host = types.SimpleNamespace(
        config=cfg,
        mesh=partitioning.create_mesh(),
        model_dir=tmp_path / "validation",
        is_main_host=False,
        _say=lambda message: None,
    )
    validator = trainer._Validator(host, mt5.MT5(trained.config), ["seahorse_q4_score"])
    placed = validator.engine.placer().place_tree(trained.params)
    by_validation = validator.engine.p_yes(placed, validator.examples[0].tokens)
    results, _ = validator.run(placed, step=3)

    assert len(by_score) == len(by_evaluate) == len(by_validation) == 24
    assert 0.01 < by_score.std()  # the random model's scores differ between rows
    np.testing.assert_allclose(by_evaluate, by_score, rtol=0, atol=1e-6)
    np.testing.assert_allclose(by_validation, by_score, rtol=0, atol=1e-6)
    labels = np.array([r["q4"] for r in trained.rows])
    result = results["seahorse_q4_score"]
    assert result["roc_auc"] == pytest.approx(roc_auc_score(labels, by_score), abs=1e-9)
    assert result["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, by_score)[0], abs=1e-6)


def test_checkpoint_meta_sets_the_input_length_and_a_mismatch_warns(trained, caplog):
    scorer = scorer_lib.Scorer(trained.model_dir)  # vocabulary from the checkpoint's meta
    assert scorer.input_length == INPUT_LENGTH
    assert scorer.vocab.sentencepiece_model_file == vocab.demo_vocab_path()
    with caplog.at_level(logging.WARNING):
        other = scorer_lib.Scorer(trained.model_dir, vocab="demo", input_length=48)
    assert other.input_length == 48
    assert f"trained with inputs of {INPUT_LENGTH} tokens; scoring with 48" in caplog.text


def test_resume_point_keeps_whole_chunks_and_cuts_the_rest(tmp_path):
    output = tmp_path / "out.jsonl"
    settings = {"chunk_size": 3, "input": "x"}
    partial = tmp_path / "out.jsonl.partial"
    lines = [json.dumps({"row": i, "score": 0.5}) + "\n" for i in range(7)]
    partial.write_text("".join(lines) + '{"row": 7, "sc', encoding="utf-8")
    (tmp_path / "out.jsonl.partial.run.json").write_text(json.dumps(settings))
    assert resume.resume_point(output, settings) == 6
    assert partial.read_text(encoding="utf-8") == "".join(lines[:6])
    with pytest.raises(errors.UserError, match="other settings \\(chunk_size was 3\\)"):
        resume.resume_point(output, {"chunk_size": 4, "input": "x"})


def test_resume_settings_see_the_whole_input_and_the_checkpoint_step(trained, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    head = json.dumps({"article": "x" * (1 << 20), "summary": "A cat."}) + "\n"
    pairs.write_text(head + json.dumps({"article": "A dog ran.", "summary": "A dog."}) + "\n")

    def record():
        return resume.RunRecord.of(
            pairs,
            trained.model_dir,
            settings_lib.ScoringSettings(),
            prompt=None,
            chunk_size=4096,
            skip_bad_rows=False,
        ).to_json()

    before = record()
    assert before["checkpoint_step"].endswith("checkpoints/3")  # the step a MODEL_DIR means
    # An edit past the first MiB that keeps the size: another input all the same.
    pairs.write_text(head + json.dumps({"article": "A cat ran.", "summary": "A dog."}) + "\n")
    after = record()
    assert after["input_bytes"] == before["input_bytes"]
    assert sorted(k for k in before if before[k] != after[k]) == ["input_sha256"]


def test_batch_size_and_model_mismatches_are_not_taken_for_damaged_steps(trained, tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    _write_jsonl(pairs, [{"article": "A cat sat.", "summary": "A cat."}])
    code = _score(["--checkpoint", str(trained.model_dir), "--input", str(pairs)] + [
        "--output", str(tmp_path / "out.jsonl"), "--batch_size", "0"
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.strip().endswith("--batch_size must be `auto` or at least 1, got 0")
    assert len(err.strip().splitlines()) == 1

    # A setting the model refuses while it loads is this run's mistake: no step is skipped.
    def placement(config):
        raise errors.UserError("the vocabulary has 5 ids; the model 4000")

    from seahorse_t5x.model import orbax_checkpoints

    with pytest.raises(errors.SettingsError, match="^the vocabulary has 5 ids; the model 4000$"):
        orbax_checkpoints.load_model_dir(trained.model_dir, placement=placement)
    assert "damaged" not in capsys.readouterr().err


def test_the_same_vocabulary_at_another_path_is_not_a_mismatch(tmp_path, caplog):
    demo = vocab.get_vocabulary("demo")
    copy = tmp_path / "copy.model"
    copy.write_bytes(pathlib.Path(demo.sentencepiece_model_file).read_bytes())
    other = tmp_path / "other.model"
    other.write_bytes(copy.read_bytes() + b"x")
    with caplog.at_level(logging.WARNING):
        scorer_lib.warn_on_vocabulary_mismatch({"vocabulary": str(copy)}, "ckpt", demo)
        moved = {"vocabulary": "/gone/demo.model", "vocabulary_sha256": vocab.file_sha256(copy)}
        scorer_lib.warn_on_vocabulary_mismatch(moved, "ckpt", demo)
    assert caplog.records == []
    with caplog.at_level(logging.WARNING):
        scorer_lib.warn_on_vocabulary_mismatch({"vocabulary": str(other)}, "ckpt", demo)
        scorer_lib.warn_on_vocabulary_mismatch({"vocabulary": "/gone/demo.model"}, "ckpt", demo)
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        f"ckpt was trained with the vocabulary {other}",
        "ckpt was trained with the vocabulary /gone/demo.model",
    ]


def test_a_multi_question_model_scored_without_the_question_warns(caplog):
    cases = [
        ({"mixture_or_task_name": "seahorse_all"}, False),
        ({"mixture_or_task_name": "seahorse_all"}, True),
        ({"mixture_or_task_name": "seahorse_q4"}, True),
        ({"mixture_or_task_name": "seahorse_q4.de"}, False),
        ({"mixture_or_task_name": "xnli_zero_shot"}, True),
        ({}, True),
    ]
    for meta, names_question in cases:
        with caplog.at_level(logging.WARNING):
            questions_lib.warn_on_question_mismatch(meta, "ckpt", names_question)
    assert [r.getMessage().split(",")[0] for r in caplog.records] == [
        "ckpt was trained on seahorse_all",
        "ckpt was trained on seahorse_q4",
    ]
    assert "give `questions`" in caplog.records[0].getMessage()
    assert caplog.records[1].getMessage().endswith("do not name the question; these do")


def test_evaluate_checks_its_output_folder_and_input_length_before_scoring(
    trained, seahorse_env, tmp_path, capsys
):
    (tmp_path / "a_file").write_text("old\n")
    base = ["evaluate", "--checkpoint", str(trained.model_dir), "--tasks", "seahorse_q4_score"]
    for output, extra, message in [
        ("a_file", [], "--output_dir {} is a file; expected a folder"),
        ("a_file/eval", [], "cannot create --output_dir {}: "),
        ("eval", ["--input_length", "3"], "--input_length 3 leaves no room for the summary"),
    ]:
        path = tmp_path / output
        code = cli.main([*base, "--output_dir", str(path), *extra])
        out, err = capsys.readouterr()
        assert code == 2 and message.format(path) in err, err
        assert len(err.strip().splitlines()) == 1 and "n=" not in out  # nothing was scored
    assert (tmp_path / "a_file").read_text() == "old\n" and not (tmp_path / "eval").exists()


def test_output_path_mistakes_are_caught_before_the_model_loads(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    _write_jsonl(pairs, [{"article": "A cat sat.", "summary": "A cat."}])
    missing_checkpoint = str(tmp_path / "no_such_checkpoint")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "exists.jsonl").write_text("old\n")
    (tmp_path / "file").write_text("")
    (tmp_path / "left.jsonl.partial").write_text("")
    cases = {
        "a_dir": "is a folder; expected a file name",
        "exists.jsonl": "exists; pass --overwrite",
        "file/out.jsonl": "is a file, not a folder",
        "left.jsonl": "interrupted run left",
    }
    for output, message in cases.items():
        code = _score(["--checkpoint", missing_checkpoint, "--input", str(pairs)] + [
            "--output", str(tmp_path / output), "--no_compilation_cache"
        ])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err, (output, err)
        assert len(err.strip().splitlines()) == 1
    assert (tmp_path / "exists.jsonl").read_text() == "old\n"
    # A good output path gets as far as the checkpoint, and leaves nothing behind.
    code = _score(["--checkpoint", missing_checkpoint, "--input", str(pairs)] + [
        "--output", str(tmp_path / "new.jsonl"), "--no_compilation_cache"
    ])  # fmt: skip
    assert code == 2 and "checkpoint not found" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("new")) == []


def test_input_length_without_room_for_the_summary_is_an_error(trained, tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    _write_jsonl(pairs, [{"article": "A cat sat.", "summary": "A cat."}])
    # The markers `premise:` and `hypothesis:` and EOS: one token each in the demo vocabulary.
    too_short = inputs.min_input_length(vocab.get_vocabulary("demo"), ["x"]) - 1
    assert too_short == 3
    code = _score(["--checkpoint", str(trained.model_dir), "--input", str(pairs)] + [
        "--output", str(tmp_path / "out.jsonl"), "--input_length", str(too_short),
        "--vocab", "demo",
        "--no_compilation_cache"
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "leaves no room for the summary" in err
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_compilation_cache_is_on_by_default_in_the_user_cache(monkeypatch, tmp_path):
    parser = cli.build_parser("score")

    def cache_for(*extra):
        args = parser.parse_args(
            ["score", "--checkpoint", "c", "--input", "i", "--output", "o"] + list(extra)
        )
        chosen = inference_flags.settings(args).compilation_cache
        return settings_lib.compilation_cache_dir(chosen)

    monkeypatch.delenv("SEAHORSE_COMPILATION_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_for() == tmp_path / "xdg" / "seahorse-t5x" / "jax"
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", str(tmp_path / "env"))
    assert cache_for() == tmp_path / "env"
    assert cache_for("--compilation_cache", str(tmp_path / "flag")) == tmp_path / "flag"
    assert cache_for("--no_compilation_cache") is None


def test_parameter_bytes_per_device_split_over_the_model_axis():
    config = configs.get_config("xxl")
    total = mt5.param_count(mt5.abstract_params(config))
    assert 12.5e9 < total < 13.5e9  # mT5-XXL: 13B parameters
    full = placement.bytes_per_device(config, {"data": 1, "model": 1}, "float32")
    assert full == 4 * total
    split = placement.bytes_per_device(config, {"data": 2, "model": 8}, "bfloat16")
    # Everything but the layer norms and relative-position tables (replicated) is split.
    assert 2 * total / 8 < split < 1.001 * 2 * total / 8


def test_plan_batches_rows_are_a_multiple_of_the_data_axis():
    lengths = [5, 64, 33, 31, 47, 49, 12, 64, 2]
    batches = batching.plan_batches(
        lengths, batching.bucket_lengths(64, "1.4"), 128, row_multiple=4
    )
    assert [(b.rows, b.length) for b in batches] == [(4, 64), (4, 48), (4, 32)]
    assert sorted(np.concatenate([b.indices for b in batches]).tolist()) == list(range(9))


def test_batches_are_dispatched_one_ahead_and_collected_in_order():
    events = []
    engine._pipelined(
        ["a", "b", "c"],
        lambda item: events.append(f"dispatch {item}") or item.upper(),
        lambda item, out: events.append(f"collect {item} {out}"),
    )
    assert events == [
        "dispatch a",
        "dispatch b",
        "collect a A",
        "dispatch c",
        "collect b B",
        "collect c C",
    ]
    engine._pipelined([], lambda item: 1 / 0, lambda item, out: 1 / 0)  # nothing to do
    events.clear()
    engine._pipelined(  # dispatch_ahead=False: each batch read before the next is built
        ["a", "b"],
        lambda item: events.append(f"dispatch {item}") or item.upper(),
        lambda item, out: events.append(f"collect {item} {out}"),
        ahead=False,
    )
    assert events == ["dispatch a", "collect a A", "dispatch b", "collect b B"]


@pytest.mark.parametrize("param_dtype", ["bfloat16", "int8"])
def test_weights_not_in_float32_are_converted_a_layer_at_a_time_on_a_cpu(tmp_path, param_dtype):
    # XLA's CPU compiler computes bfloat16 products in float32; with its loop-invariant code
    # motion it would convert every layer's weights ahead of the layer loop, temporaries
    # growing with the depth. The engine compiles such programs without that pass.
    from seahorse_t5x.inference import executables

    temps, scores = [], []
    for layers in (2, 6):
        config = configs.get_config(
            "tiny", dropout_rate=0.0, num_encoder_layers=layers, num_decoder_layers=layers
        )
        runner = engine.Engine(config, (2, 3), max_input_length=64, batch_size=2,
                               program_cache_dir=tmp_path / str(layers))  # fmt: skip
        placer = runner.placer(param_dtype)
        params = placer.stack_layers(
            placer.place_tree(mt5.init_params(config, jax.random.PRNGKey(0)))
        )
        assert runner.argument_options((params,)) == {
            "xla_disable_hlo_passes": "while-loop-invariant-code-motion"
        }
        executables.clear_memory()
        scores.append(runner.p_yes(params, [np.arange(2, 40, dtype=np.int32)] * 2))
        (compiled,) = executables._IN_MEMORY.values()
        temps.append(compiled.memory_analysis().temp_size_in_bytes)
    executables.clear_memory()
    assert temps[0] == temps[1]
    assert all(np.isfinite(s).all() for s in scores)
    float32 = runner.placer("float32")
    assert (
        runner.argument_options(
            (float32.place_tree(mt5.init_params(config, jax.random.PRNGKey(0))),)
        )
        == {}
    )


_MESH_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {tests!r})
    import jax, numpy as np
    from seahorse_t5x.model import partitioning
    from seahorse_t5x.formats import vocab
    from seahorse_t5x.inference import scorer as scorer_lib
    from seahorse_t5x.model import configs, mt5
    from mt5_fixtures import save_hf_tiny

    save_hf_tiny({tmp!r}, "safetensors", seed=4)
    words = "the council approved a new budget after long debate rain flooded streets".split()
    rng = np.random.default_rng(0)
    articles = [" ".join(rng.choice(words, size=4 * k)) for k in range(1, 13)]
    summaries = [" ".join(rng.choice(words, size=4)) for _ in range(12)]
    out = {{"devices": jax.device_count(), "runs": {{}}}}
    for data, model in ((1, 1), (8, 1), (4, 2), (2, 4)):
        # The 2x4 scorer is given the `mesh` setting's (data, model) shape, the rest a Mesh.
        mesh = (data, model) if (data, model) == (2, 4) else partitioning.create_mesh(
            partitioning.MeshConfig(model_parallel=model, data_parallel=data))
        for dtype in ("float32", "bfloat16"):
            scorer = scorer_lib.Scorer({tmp!r}, vocab="demo", input_length=64,
                                       batch_size=2, mesh=mesh, param_dtype=dtype)
            wi = scorer.params["encoder"]["layers"]["layer"]["mlp"]["wi_0"]["kernel"]
            logits = scorer.engine.label_logits(
                scorer.params, scorer.encode(articles, summaries).tokens)
            out["runs"][f"{{data}}x{{model}}_{{dtype}}"] = {{
                "scores": scorer.score(articles, summaries).tolist(),
                "log_odds": (logits[:, 0] - logits[:, 1]).tolist(),
                "wi_spec": [str(a) for a in wi.sharding.spec],
                "wi_dtype": str(wi.dtype),
                "wi_shard": list(wi.addressable_shards[0].data.shape),
            }}
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow
def test_every_mesh_gives_the_same_scores(tmp_path):
    result = runner_fixtures.run_on_simulated_devices(
        _MESH_SCRIPT.format(tests=str(TESTS), tmp=str(tmp_path / "hf")), tmp_path / "meshes.py"
    )
    assert result["devices"] == 8
    runs = result["runs"]
    base = np.asarray(runs["1x1_float32"]["scores"])
    base_odds = np.asarray(runs["1x1_float32"]["log_odds"])
    assert len(base) == 12 and len(set(np.round(base_odds, 4))) == 12  # every row differs
    for mesh in ("8x1", "4x2", "2x4"):
        np.testing.assert_allclose(runs[f"{mesh}_float32"]["scores"], base, rtol=0, atol=1e-5)
        np.testing.assert_allclose(runs[f"{mesh}_float32"]["log_odds"], base_odds, atol=1e-4)
        bf16 = np.asarray(runs[f"{mesh}_bfloat16"]["log_odds"])
        assert np.all(np.abs(bf16 - base_odds) <= 0.05 * np.abs(base_odds) + 0.05), mesh
    # The tiny model's mlp (64 wide) is split over `model` (4 of them where the Scorer made
    # its mesh from the shape), the stacked layer axis is not; weights kept in bfloat16.
    assert runs["2x4_float32"]["wi_spec"] == ["None", "None", "model"]
    assert runs["2x4_float32"]["wi_shard"][0] == runs["1x1_float32"]["wi_shard"][0] == 2
    assert runs["2x4_float32"]["wi_shard"][2] == runs["1x1_float32"]["wi_shard"][2] // 4
    assert runs["4x2_bfloat16"]["wi_dtype"] == "bfloat16"
    assert runs["1x1_float32"]["wi_dtype"] == "float32"


def _score_process(trained, pairs, out, *extra, env=None) -> subprocess.Popen:
    env = {**os.environ, **(env or {})}
    if "XLA_FLAGS" in env:
        env.pop("JAX_NUM_CPU_DEVICES", None)  # it would override the flag's device count
    env.update(
        JAX_PLATFORMS="cpu",
        SEAHORSE_COMPILATION_CACHE=runner_fixtures.compilation_cache_dir(),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    command = [sys.executable, "-m", "seahorse_t5x.cli", "score", "--checkpoint"]
    command += [str(trained.model_dir), "--input", str(pairs), "--output", str(out)]
    command += ["--chunk_size", "8", "--batch_size", "1", *extra]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _numbered_pairs(tmp_path: pathlib.Path, count: int, seed: int) -> pathlib.Path:
    """`pairs.jsonl`: `count` (id, article, summary) rows, ids 0..count-1 in file order."""
    pairs = tmp_path / "pairs.jsonl"
    _write_jsonl(pairs, [{"id": i, "article": r["article"], "summary": r["summary"]}
                         for i, r in enumerate(_rows(count, seed))])  # fmt: skip
    return pairs


def _lines(path: pathlib.Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_killed_score_resumes_to_the_uninterrupted_output(trained, tmp_path):
    pairs = _numbered_pairs(tmp_path, 400, seed=7)
    reference = tmp_path / "reference.jsonl"
    done = _score_process(trained, pairs, reference)
    assert done.wait(timeout=600) == 0, done.stderr.read()[-2000:]

    out = tmp_path / "resumed.jsonl"
    partial = tmp_path / "resumed.jsonl.partial"
    rng = random.Random(0)
    kills = 0
    for attempt in range(6):
        # SIGKILL once the run has written a random number of rows (a random point of it).
        target = rng.randint(1, 360)
        process = _score_process(trained, pairs, out, *(["--resume"] if attempt else []))
        while process.poll() is None and _lines(partial) < target:
            time.sleep(0.002)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            assert not out.exists()
        if out.exists():
            break
    if not out.exists():
        finish = _score_process(trained, pairs, out, "--resume")
        assert finish.wait(timeout=600) == 0, finish.stderr.read()[-2000:]
    assert kills >= 2
    resumed, expected = _read_jsonl(out), _read_jsonl(reference)
    assert [r["id"] for r in resumed] == list(range(400))  # none lost, none twice
    assert resumed == expected  # row for row, scores bit for bit
    assert not partial.exists() and not (tmp_path / "resumed.jsonl.partial.run.json").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _two_processes(trained, pairs, out, *extra) -> list[subprocess.Popen]:
    """`score` as on two hosts: `jax.distributed` on localhost, two CPU devices per process,
    one `data=4` mesh over both."""
    port, processes = _free_port(), []
    for process_id in range(2):
        flags = ["--mesh", "data=4", "--coordinator_address", f"localhost:{port}"]
        flags += ["--num_processes", "2", "--process_id", str(process_id), *extra]
        env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
        processes.append(_score_process(trained, pairs, out, *flags, env=env))
    return processes


@pytest.mark.slow
def test_two_processes_write_one_file_in_input_order_and_resume(trained, tmp_path):
    pairs = _numbered_pairs(tmp_path, 200, seed=11)
    reference = tmp_path / "reference.jsonl"
    assert _score(["--checkpoint", str(trained.model_dir), "--input", str(pairs)] + [
        "--output", str(reference), "--chunk_size", "8", "--batch_size", "1"
    ]) == 0  # fmt: skip
    expected = _read_jsonl(reference)

    def check(path: pathlib.Path) -> None:
        got = _read_jsonl(path)
        assert [r["id"] for r in got] == list(range(200))  # one file, input order
        assert [{k: v for k, v in r.items() if k != "score"} for r in got] == [
            {k: v for k, v in r.items() if k != "score"} for r in expected
        ]
        np.testing.assert_allclose(
            [r["score"] for r in got], [r["score"] for r in expected], atol=1e-5
        )

    both = tmp_path / "both.jsonl"
    for process in _two_processes(trained, pairs, both):
        assert process.wait(timeout=600) == 0, process.stderr.read()[-2000:]
    check(both)

    # A one-process run killed after 16+ rows, resumed by two processes: process 0 finds
    # the rows already written and tells the other where to start.
    resumed = tmp_path / "resumed.jsonl"
    partial = tmp_path / "resumed.jsonl.partial"
    first = _score_process(trained, pairs, resumed)
    while first.poll() is None and _lines(partial) < 16:
        time.sleep(0.002)
    assert first.poll() is None, "the run ended before it could be interrupted"
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not resumed.exists() and _lines(partial) >= 16
    processes = _two_processes(trained, pairs, resumed, "--resume")
    outputs = [p.communicate(timeout=600) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs[0][1][-2000:]
    assert "resumed after" in outputs[0][0]
    check(resumed)
    assert not partial.exists()


def test_inputs_keep_the_summary_and_the_minimum_length(trained):
    demo = vocab.get_vocabulary("demo")
    summaries = ["a budget was approved", "rain"]
    need = inputs.min_input_length(demo, summaries)
    encoded = inputs.encode_pairs(demo, ["long article " * 50] * 2, summaries, need)
    assert not encoded.summary_truncated.any()
    assert inputs.encode_pairs(demo, ["x"], summaries[:1], need - 1).summary_truncated.all()


def _row_tokens(count: int, seed: int) -> list[np.ndarray]:
    """Token ids of `_rows(count, seed)` with the demo vocabulary, cut to INPUT_LENGTH."""
    rows = _rows(count, seed)
    return inputs.encode_pairs(
        vocab.get_vocabulary("demo"),
        [r["article"] for r in rows],
        [r["summary"] for r in rows],
        INPUT_LENGTH,
    ).tokens


def test_bucket_shapes_lower_from_one_trace_to_the_same_programs(trained):
    tokens = _row_tokens(40, seed=11)
    runner = engine.Engine(trained.config, (3, 4), None, INPUT_LENGTH, batch_size=2, ladder="1.2")
    placer = runner.placer()
    params = placer.stack_layers(placer.place_tree(trained.params))
    batches = runner.plan([len(t) for t in tokens])
    shapes = sorted({(b.rows, b.length) for b in batches})
    assert len(shapes) >= 3
    traced_shapes = []

    def counted(params, batch):  # runs once per trace
        traced_shapes.append(batch.shape)
        return engine.label_logits(trained.config, (3, 4), params, batch)

    once = engine.TracedOnce(jax.jit(counted), data_size=1)
    per_shape = jax.jit(functools.partial(engine.label_logits, trained.config, (3, 4)))
    for rows_, length in shapes:
        batch = np.zeros((rows_, length), np.int32)
        batch[:, : length - 1] = np.arange(5, 5 + length - 1) % 90 + 5
        batch[:, length - 1] = 1
        compiled = once.lower(params, batch).compile()
        np.testing.assert_array_equal(
            np.asarray(compiled(params, batch)), np.asarray(per_shape(params, batch))
        )
    assert once.traces == 1 and len(traced_shapes) == 1
    assert not all(isinstance(d, int) for d in traced_shapes[0])  # symbolic (rows, length)


def test_packed_rows_give_the_bucketed_scores(trained):
    tokens = _row_tokens(40, seed=9)
    bucketed = engine.Engine(trained.config, (3, 4), None, INPUT_LENGTH, batch_size=2)
    packed = engine.Engine(trained.config, (3, 4), None, INPUT_LENGTH, batch_size=2, packing=True)
    placer = bucketed.placer()
    params = placer.place_tree(trained.params)
    stacked = placer.stack_layers(params)  # packed rows run scanned, buckets unrolled here
    packing = batching.pack_rows([len(t) for t in tokens], INPUT_LENGTH, packed.max_segments)
    assert sorted(i for row in packing for i in row) == list(range(40))
    assert max(len(row) for row in packing) > 1  # some rows hold several inputs
    assert all(sum(len(tokens[i]) for i in row) <= INPUT_LENGTH for row in packing)
    np.testing.assert_allclose(
        packed.label_logits(stacked, tokens), bucketed.label_logits(params, tokens), atol=1e-4
    )
    np.testing.assert_allclose(
        packed.p_yes(stacked, tokens), bucketed.p_yes(params, tokens), rtol=0, atol=1e-6
    )


_PROGRAMS_SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    from seahorse_t5x.formats import vocab
    from seahorse_t5x.inference import engine, inputs
    from seahorse_t5x.model import checkpoints

    config, params = checkpoints.load_checkpoint({model_dir!r})
    tokens = inputs.encode_pairs(
        vocab.get_vocabulary("demo"), {articles!r}, {summaries!r}, {length}).tokens
    scorer = engine.Engine(  # every length of the ladder its shape: several programs
        config, (3, 4), None, {length}, batch_size=2, ladder="1.2",
        program_cache_dir={programs!r})
    placer = scorer.placer({dtype!r})
    logits = scorer.label_logits(placer.stack_layers(placer.place_tree(params)), tokens)
    print("RESULT " + json.dumps({{
        "shapes": len(scorer.shapes([len(t) for t in tokens])),
        "loaded": scorer._executables.loaded,
        "compiled": scorer._executables.compiled_now,
        "logits": logits.tolist(),
    }}))
    """
)


def test_compiled_programs_load_from_disk_and_a_damaged_one_is_compiled_again(trained, tmp_path):
    rows = _rows(24, seed=5)
    programs = tmp_path / "programs"

    def run(dtype="float32"):  # a new process each time, as a second `score` run is
        script = _PROGRAMS_SCRIPT.format(
            model_dir=str(trained.model_dir),
            articles=[r["article"] for r in rows],
            summaries=[r["summary"] for r in rows],
            length=INPUT_LENGTH,
            programs=str(programs),
            dtype=dtype,
        )
        return runner_fixtures.run_on_simulated_devices(script, tmp_path / "run.py", devices=1)

    first = run()
    shapes = first["shapes"]
    files = sorted(programs.glob("*.xla"))
    assert shapes >= 2 and len(files) == shapes == first["compiled"]
    second = run()
    assert (second["loaded"], second["compiled"]) == (shapes, 0)
    assert second["logits"] == first["logits"]  # bit for bit
    files[0].write_bytes(files[0].read_bytes()[:100])  # a truncated file
    third = run()
    assert (third["loaded"], third["compiled"]) == (shapes - 1, 1)
    assert third["logits"] == first["logits"]
    assert files[0].stat().st_size > 100  # rewritten
    # Files that load but do not fit their arguments (swapped) are compiled again.
    first_bytes, second_bytes = files[0].read_bytes(), files[1].read_bytes()
    files[0].write_bytes(second_bytes)
    files[1].write_bytes(first_bytes)
    swapped = run()
    assert (swapped["loaded"], swapped["compiled"]) == (shapes - 2, 2)
    assert swapped["logits"] == first["logits"]
    rewritten = run()  # with the right programs
    assert (rewritten["loaded"], rewritten["compiled"]) == (shapes, 0)
    assert rewritten["logits"] == first["logits"]
    # Weights in another dtype make other programs, never a stale one.
    assert run("bfloat16")["compiled"] == shapes
    assert len(list(programs.glob("*.xla"))) == 2 * shapes


def test_score_input_with_a_bom_and_bad_utf8_rows(trained, tmp_path, capsys):
    good = {"article": "A cat sat on the mat.", "summary": "A cat sat."}
    raw = b"\xef\xbb\xbf" + json.dumps(good).encode() + b"\n"
    raw += b'{"article": "caf\xe9", "summary": "x"}\n' + json.dumps(good).encode() + b"\n"
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_bytes(raw)
    base = ["--checkpoint", str(trained.model_dir), "--input", str(pairs), "--vocab", "demo"]
    base += ["--no_compilation_cache"]
    assert _score(base + ["--output", str(tmp_path / "a.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "1 bad rows (line 2: not valid UTF-8)" in err and "Traceback" not in err
    assert _score(base + ["--output", str(tmp_path / "b.jsonl"), "--skip_bad_rows"]) == 0
    written = _read_jsonl(tmp_path / "b.jsonl")
    assert [w["score"] is None for w in written] == [False, True, False]
    assert written[1] == {"line": 2, "score": None, "error": "not valid UTF-8"}
    assert written[0]["score"] == written[2]["score"]  # the BOM is not part of the row
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_bytes(b"\xef\xbb\xbfarticle,summary\nA cat sat on the mat.,A cat sat.\n")
    assert (
        _score(base[:3] + [str(csv_path)] + base[4:] + ["--output", str(tmp_path / "c.jsonl")]) == 0
    )
    assert _read_jsonl(tmp_path / "c.jsonl")[0]["score"] == pytest.approx(
        written[0]["score"], abs=1e-6
    )
