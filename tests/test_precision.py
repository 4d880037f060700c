"""`--dtype auto`: the platform's choice of the products' dtype, the CPU flags it reports, and
the chosen dtype in the compiled programs' keys."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from seahorse_t5x import errors
from seahorse_t5x.inference import engine, precision, settings
from seahorse_t5x.model import configs, mt5

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni amx_bf16 amx_tile
bogomips\t: 4600.00

processor\t: 1
flags\t\t: fpu sse2
"""


def test_cpu_flags_are_read_from_the_first_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO)
    flags = precision.cpu_flags(cpuinfo)
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= flags and len(flags) == 8
    assert precision.cpu_flags(tmp_path / "missing") == frozenset()


@pytest.mark.parametrize(
    ("platform", "flags", "dtype", "described"),
    [
        ("gpu", None, "bfloat16", "bfloat16 (auto: gpu)"),
        ("cuda", None, "bfloat16", "bfloat16 (auto: cuda)"),
        ("TPU", None, "bfloat16", "bfloat16 (auto: tpu)"),
        ("cpu", {"avx2"}, "float32", "float32 (auto: cpu)"),
        # XLA's CPU products are not faster in bfloat16 on these (docs/scoring.md): reported.
        ("cpu", {"avx512_bf16"}, "float32", "float32 (auto: cpu with avx512_bf16)"),
        ("cpu", {"amx_bf16", "avx512_bf16"}, "float32", "float32 (auto: cpu with avx512_bf16, amx_bf16)"),
    ],
)  # fmt: skip
def test_auto_chooses_by_platform(platform, flags, dtype, described):
    choice = precision.choose("auto", platform, None if flags is None else frozenset(flags))
    assert (choice.dtype, choice.requested, choice.describe()) == (dtype, "auto", described)


def test_auto_reads_the_cpu_flags_and_explicit_dtypes_pass_through(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"amx_bf16"}))
    choice = precision.choose("auto", "cpu")
    assert choice.bf16_flags == ("amx_bf16",) and choice.dtype == "float32"
    assert precision.choose("bfloat16", "cpu").describe() == "bfloat16"
    assert precision.choose("float32", "gpu").dtype == "float32"
    assert precision.choose("auto").platform == jax.default_backend()
    with pytest.raises(errors.UserError, match="float16 overflows"):
        precision.choose("float16", "cpu")


def test_each_dtype_has_its_own_compiled_programs(tmp_path):
    # A distance no other test uses: its programs cannot be in this process's memory yet.
    config = configs.get_config("tiny", dropout_rate=0.0, relative_attention_max_distance=97)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    tokens = [np.array([5, 6, 7, 1], np.int32), np.array([9, 1], np.int32)]
    logits = {}
    for dtype in ("float32", "bfloat16", "float32"):
        eng = engine.Engine(
            config.replace(dtype=dtype), (3, 4), None, 32, 2, program_cache_dir=tmp_path
        )
        placer = eng.placer()
        logits.setdefault(dtype, []).append(
            eng.label_logits(placer.stack_layers(placer.place_tree(params)), tokens)
        )
        assert (eng._executables.compiled_now, eng._executables.loaded) == (
            (1, 0) if len(logits[dtype]) == 1 else (0, 0)  # the second: from memory
        )
    assert len(list(tmp_path.glob("*.xla"))) == 2
    np.testing.assert_array_equal(logits["float32"][0], logits["float32"][1])
    assert not np.array_equal(logits["float32"][0], logits["bfloat16"][0])
    np.testing.assert_allclose(logits["float32"][0], logits["bfloat16"][0], atol=0.05)


def _dot_precisions(dtype: str) -> set[str]:
    """The `precision` of every matrix product in the model's forward pass and its gradient."""
    config = configs.get_config("tiny", dropout_rate=0.0, dtype=dtype)
    model = mt5.MT5(config)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    tokens = np.full((1, 8), 5, np.int32)

    def loss(p):
        return model.apply({"params": p}, tokens, tokens[:, :4]).sum()

    found: list[str] = []

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                found.append(str(eqn.params["precision"]))
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(jax.make_jaxpr(jax.grad(loss))(params).jaxpr)
    assert len(found) > 20  # projections, attention, output layer; forward and backward
    return set(found)


def test_float32_products_run_at_highest_precision_and_bfloat16_at_the_platforms():
    # Without HIGHEST, a GPU's float32 product rounds its operands to TF32: measured on an
    # H200 (PERFORMANCE.md), a 4096^3 product's relative error was 3.2e-4, not 2.9e-6.
    assert _dot_precisions("float32") == {"(Precision.HIGHEST, Precision.HIGHEST)"}
    assert _dot_precisions("bfloat16") == {"None"}


@pytest.mark.parametrize(
    ("value", "platform", "rows"),
    [("auto", "cpu", 1), ("auto", "CPU", 1), ("auto", "gpu", 8), ("auto", "tpu", 8),
     (4, "cpu", 4), (16, "gpu", 16)],
)  # fmt: skip
def test_batch_size_auto_chooses_by_platform(value, platform, rows):
    assert settings.choose_batch_size(value, platform) == rows


def test_batch_size_text_and_range_are_checked():
    assert settings.parse_batch_size(" Auto ") == "auto" and settings.parse_batch_size("3") == 3
    with pytest.raises(
        errors.UserError, match=r"^batch_size must be `auto` or an integer, got 'x'$"
    ):
        settings.parse_batch_size("x")
    for bad in (0, -1, True, 2.0, "8"):
        with pytest.raises(errors.UserError, match="^batch_size must be `auto` or at least 1"):
            settings.choose_batch_size(bad, "cpu")
