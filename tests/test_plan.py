"""`seahorse-t5x plan` and `runner.plan`: the AOT memory plan, on the tiny model and an
8-device CPU mesh, compiled in a fresh process with the simulated devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from seahorse_t5x import errors
from seahorse_t5x.model import configs
from seahorse_t5x.runner import plan


def _tiny_1_layer_counts(shards: int) -> int:
    """Parameters of tiny mT5 with one encoder and one decoder layer, counted by hand from
    its dimensions; with `shards` > 1, one device's share when the vocab, heads and mlp
    dimensions are split `shards` ways and embed-only ones replicated."""
    cfg = configs.get_config("tiny")
    v, e, m, b = cfg.vocab_size, cfg.emb_dim, cfg.mlp_dim, cfg.relative_attention_num_buckets
    hd = cfg.num_heads * cfg.head_dim
    attention = 4 * e * hd // shards  # query, key, value, out
    mlp = 3 * e * m // shards  # wi_0, wi_1, wo
    relpos = cfg.num_heads * b // shards
    encoder = attention + mlp + 2 * e + relpos + e  # 2 layer norms, relpos, encoder_norm
    decoder = 2 * attention + mlp + 3 * e + relpos + e
    return v * e // shards + encoder + decoder + e * v // shards  # embedder, logits_dense


def test_request_checks_batch_against_mesh_and_microbatches():
    plan.PlanRequest("tiny", data=4, model_parallel=2, batch_size=8, microbatches=2).check()
    with pytest.raises(errors.UserError, match="not divisible by microbatches 3"):
        plan.PlanRequest("tiny", data=1, model_parallel=1, batch_size=8, microbatches=3).check()
    with pytest.raises(errors.UserError, match="multiple of data \\* microbatches = 8"):
        plan.PlanRequest("tiny", data=4, model_parallel=1, batch_size=12, microbatches=2).check()


def test_request_checks_size_and_dtype():
    with pytest.raises(errors.UserError, match="unknown model size 'huge'"):
        plan.PlanRequest("huge", data=1, model_parallel=1, batch_size=8).check()
    with pytest.raises(errors.UserError, match="dtype must be one of auto, float32, bfloat16"):
        plan.PlanRequest("tiny", data=1, model_parallel=1, batch_size=8, dtype="fp8").check()
    # `auto` plans for an accelerator: bfloat16 products, as `auto` chooses on GPUs and TPUs.
    auto = plan.PlanRequest("tiny", data=1, model_parallel=1, batch_size=8, dtype="auto")
    assert auto.compute_dtype == "bfloat16"
    assert plan._model_config(auto, 1).dtype == "bfloat16"
    assert plan.PlanRequest("tiny", 1, 1, 8, dtype="float32").compute_dtype == "float32"


def test_xla_flags_keep_other_flags_and_replace_the_device_count():
    flags = plan.plan_xla_flags("--xla_foo=1 --xla_force_host_platform_device_count=2", 16)
    parts = flags.split()
    assert parts[0] == "--xla_foo=1"
    assert "--xla_force_host_platform_device_count=16" in parts
    assert "--xla_force_host_platform_device_count=2" not in parts
    assert set(plan.FAST_COMPILE_FLAGS) <= set(parts)


def test_a_scoring_plan_holds_no_float32_copy_of_bfloat16_weights():
    # XLA's CPU compiler would convert the stacked bfloat16 weights to float32 ahead of the
    # layer loop (temporaries growing with depth by twice the weights' bytes); GPUs and
    # TPUs run them in bfloat16, one layer at a time, as the plan now compiles them.
    plans = [
        plan.plan_memory(
            plan.PlanRequest(
                "tiny", data=1, model_parallel=1, batch_size=2, input_length=64,
                num_layers=layers, scoring=True, param_dtype="bfloat16", dtype="bfloat16",
            )
        )
        for layers in (2, 6)
    ]  # fmt: skip
    assert plans[1].params_bytes > plans[0].params_bytes
    assert plans[1].temp_bytes == plans[0].temp_bytes


def test_a_scoring_plan_is_not_extrapolated():
    request = plan.PlanRequest("tiny", data=1, model_parallel=1, batch_size=2, scoring=True)
    with pytest.raises(errors.UserError) as refused:
        plan.plan_memory(request, extrapolate_from=1)
    assert str(refused.value) == (
        "extrapolate_from is for train steps: a scoring plan runs its layers in one loop "
        "and compiles the full depth in seconds (leave it out)"
    )


def _fake_plan(layers: int, **overrides) -> plan.MemoryPlan:
    values = dict(
        request=plan.PlanRequest("xxl", data=2, model_parallel=8, batch_size=32),
        num_params=100 + 10 * layers,
        encoder_layers=layers,
        decoder_layers=layers,
        params_bytes=1000 + 100 * layers,
        optimizer_bytes=10 + layers,
        batch_bytes=64,
        temp_bytes=5000 + 1000 * layers,
        argument_bytes=1074 + 101 * layers,
        output_bytes=1010 + 101 * layers,
        alias_bytes=1010 + 101 * layers,
        code_bytes=0,
        compile_seconds=1.0,
    )
    values.update(overrides)
    return plan.MemoryPlan(**values)


def test_extrapolation_is_linear_per_layer():
    full = plan._extrapolate(_fake_plan(1), _fake_plan(2), 2, 24)
    expected = _fake_plan(24)
    for name in plan._LINEAR_FIELDS:
        assert getattr(full, name) == getattr(expected, name), name
    assert full.extrapolated_from == (1, 2) and full.encoder_layers == 24
    assert full.compile_seconds == 2.0


def test_fits_and_text_report():
    gib = plan.GIB
    small = _fake_plan(
        2, argument_bytes=10 * gib, temp_bytes=4 * gib, output_bytes=gib, alias_bytes=gib
    )
    assert small.peak_bytes == 14 * gib
    assert small.fits(16.0) and not small.fits(15.0)  # 90% of 16 GiB = 14.4 GiB
    text = plan.format_text(small)
    assert "peak estimate     14.00 GiB" in text
    assert "TPU v3 core     16.0 GiB  yes (88%)" in text
    assert "TPU v5p         95.0 GiB  yes (15%)" in text
    row = plan.format_markdown_row(small)
    assert row.startswith("| mT5 xxl (2+2 layers) | 2 x 8 | 32 x 2048/4 | 1 |")
    assert "14.00 GiB" in row


def test_json_round_trip():
    extrapolated = plan._extrapolate(_fake_plan(1), _fake_plan(2), 2, 24)
    again = plan.from_json(json.loads(json.dumps(plan.to_json(extrapolated))))
    assert again == extrapolated


def _plan_json(args: list[str]) -> dict:
    """Runs `seahorse-t5x plan ... --format json` in a fresh process without the device flag
    (the plan must be compiled in a process with the devices its mesh needs)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    result = subprocess.run(
        [sys.executable, "-m", "seahorse_t5x.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.slow
def test_plan_cli_compiles_tiny_model_on_8_simulated_devices():
    # The command starts without the device flag: the plan needs a process with 8 devices.
    args = ["plan", "--size", "tiny", "--mesh", "data=4,model=2", "--batch_size", "8"]
    args += ["--input_length", "16", "--target_length", "4", "--microbatches", "2"]
    args += ["--num_layers", "1", "--format", "json"]
    out = _plan_json(args)
    assert out["request"]["data"] == 4 and out["request"]["model_parallel"] == 2
    assert out["num_params"] == _tiny_1_layer_counts(shards=1)
    assert out["params_bytes"] == 4 * _tiny_1_layer_counts(shards=2)  # float32
    assert out["encoder_layers"] == out["decoder_layers"] == 1
    # Batch: 7 int32 features of 8 x 16 or 8 x 4 and float32 weights, split over data=4.
    assert out["batch_bytes"] == (3 * 8 * 16 + 5 * 8 * 4) * 4 // 4
    assert out["optimizer_bytes"] > 0 and out["temp_bytes"] > 0
    # Parameters and optimizer state are donated: the new ones reuse their buffers (all but
    # a few scalar optimizer leaves).
    donated = out["params_bytes"] + out["optimizer_bytes"]
    assert donated - 1024 <= out["alias_bytes"] <= donated
    assert out["peak_bytes"] == (
        out["argument_bytes"]
        + out["temp_bytes"]
        + max(0, out["output_bytes"] - out["alias_bytes"])
        + out["code_bytes"]
    )
    assert set(out["fits"]) == {kind for kind, _ in plan.DEVICE_HBM_GIB}
    assert all(out["fits"].values())


def test_plan_cli_user_errors_are_one_line(capsys):
    from seahorse_t5x.cli import main

    assert main(["plan", "--size", "tiny", "--mesh", "data=x", "--batch_size", "8"]) == 2
    assert "--mesh 'data=x'" in capsys.readouterr().err
    assert main(["plan", "--size", "huge", "--mesh", "data=1", "--batch_size", "8"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x plan: error: unknown model size 'huge'; choose one of "
        "['tiny', 'small', 'base', 'large', 'xl', 'xxl']\n"
    )
    assert main(["plan", "--mesh", "data=1", "--batch_size", "8"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x plan: error: the following arguments are required: --size\n"
    )


def test_plan_cli_model_is_a_deprecated_spelling_of_size(capsys):
    from seahorse_t5x.cli import main

    assert main(["plan", "--model", "huge", "--mesh", "data=1", "--batch_size", "8"]) == 2
    note, error = capsys.readouterr().err.splitlines()
    assert note == "seahorse-t5x plan: note: --model is deprecated; use --size"
    assert error.startswith("seahorse-t5x plan: error: unknown model size 'huge'")


def test_plan_memory_from_python_compiles_in_a_fresh_process():
    # This process keeps its own devices; the scoring batch is compiled on 4 simulated ones.
    request = plan.PlanRequest(
        "tiny",
        data=2,
        model_parallel=2,
        batch_size=4,
        input_length=32,
        num_layers=1,
        dtype="auto",
        scoring=True,
        param_dtype="bfloat16",
    )
    result = plan.plan_memory(request)
    assert result.request == request
    assert result.num_params == _tiny_1_layer_counts(shards=1)
    assert result.params_bytes == 2 * _tiny_1_layer_counts(shards=2)  # bfloat16, model=2
    assert result.optimizer_bytes == 0 and result.alias_bytes == 0
    assert result.batch_bytes == 4 * 32 * 4 // 2  # int32 tokens split over data=2
    assert result.temp_bytes > 0
    assert "scoring (bfloat16 weights, bfloat16 (auto) products" in plan.format_text(result)


def test_plan_memory_reports_the_compiling_process_refusal_as_one_error():
    request = plan.PlanRequest("tiny", data=1, model_parallel=1, batch_size=8)
    depth = configs.get_config("tiny").num_encoder_layers
    with pytest.raises(errors.UserError) as refused:
        plan.plan_memory(request, extrapolate_from=depth)
    assert str(refused.value) == (
        f"extrapolate_from must be in 1..{depth // 2} for tiny, got {depth}"
    )


def test_plan_cli_scoring_batch_with_int8_weights():
    from seahorse_t5x.inference import placement
    from seahorse_t5x.model import configs

    args = ["plan", "--size", "tiny", "--mesh", "data=2,model=2", "--batch_size", "4"]
    args += ["--input_length", "32", "--num_layers", "1", "--scoring", "--format", "json"]
    int8 = _plan_json([*args, "--param_dtype", "int8"])
    bf16 = _plan_json([*args, "--param_dtype", "bfloat16"])
    one_layer = configs.get_config("tiny").replace(num_encoder_layers=1, num_decoder_layers=1)
    expected = placement.bytes_per_device(one_layer, {"data": 2, "model": 2}, "int8")
    assert int8["params_bytes"] == expected < bf16["params_bytes"]
    assert int8["argument_bytes"] == expected + int8["batch_bytes"]


def test_plan_cli_dtype_auto_is_deprecated_for_bfloat16(monkeypatch, capsys):
    # `auto` chooses for the platform a command runs on (`score`: float32 on a CPU); a plan
    # is for an accelerator, where it meant bfloat16: still taken so, after a note.
    from seahorse_t5x.cli import main

    requests = []
    monkeypatch.setattr(plan, "plan_memory", lambda request, **_: requests.append(request) or 1 / 0)
    argv = ["plan", "--size", "tiny", "--mesh", "data=1,model=1", "--batch_size", "8"]
    with pytest.raises(ZeroDivisionError):
        main([*argv, "--dtype", "auto"])
    assert capsys.readouterr().err == (
        "seahorse-t5x plan: note: --dtype auto is deprecated; use --dtype bfloat16\n"
    )
    with pytest.raises(ZeroDivisionError):
        main([*argv, "--dtype", "bfloat16"])
    assert capsys.readouterr().err == ""
    assert [r.dtype for r in requests] == ["bfloat16", "bfloat16"]
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "--dtype {float32,bfloat16}" in capsys.readouterr().out
