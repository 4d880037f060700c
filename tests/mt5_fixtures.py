"""Tiny mT5 fixtures shared by the model, checkpoint and scoring tests.

A random HF `MT5ForConditionalGeneration` (CPU, float32) is the independent reference.
"""

from __future__ import annotations

import functools
import pathlib

import jax
import numpy as np

from seahorse_t5x.model import configs, mt5

TINY = configs.get_config("tiny", dropout_rate=0.0)


def hf_tiny_model(seed: int = 0, vocab_size: int | None = None):
    """A random tiny HF mT5 whose shapes equal `TINY` (or TINY with another vocab size)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    hf_config = transformers.MT5Config(
        vocab_size=vocab_size or TINY.vocab_size,
        d_model=TINY.emb_dim,
        d_kv=TINY.head_dim,
        d_ff=TINY.mlp_dim,
        num_layers=TINY.num_encoder_layers,
        num_decoder_layers=TINY.num_decoder_layers,
        num_heads=TINY.num_heads,
        relative_attention_num_buckets=TINY.relative_attention_num_buckets,
        relative_attention_max_distance=TINY.relative_attention_max_distance,
        dropout_rate=0.0,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    return perturb(transformers.MT5ForConditionalGeneration(hf_config).eval())


def hf_tiny_and_params(seed: int):
    """A tiny HF model and its weights in this project's layout (plain arrays)."""
    from seahorse_t5x.model import hf_checkpoints

    model = hf_tiny_model(seed=seed)
    return model, mt5.unbox(hf_checkpoints.from_hf_state_dict(TINY, model.state_dict()))


def perturb(model):
    """HF's init leaves layer norms at 1 and some tensors tiny: perturb them so a wrong
    mapping or transposition cannot hide. Returns the model."""
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if "layer_norm" in name:
                param.copy_(1.0 + 0.2 * torch.randn_like(param))
            elif "relative_attention_bias" in name:
                param.copy_(torch.randn_like(param))
    return model


def save_hf_tiny(directory: pathlib.Path, fmt: str = "safetensors", seed: int = 0, **kw):
    """Saves a tiny HF model as `safetensors` or `bin`; returns the torch model."""
    model = hf_tiny_model(seed, **kw)
    model.save_pretrained(directory)
    if fmt == "bin":
        import torch

        for f in directory.glob("*.safetensors*"):
            f.unlink()
        torch.save(model.state_dict(), directory / "pytorch_model.bin")
    return model


def hf_logits(model, encoder_tokens: np.ndarray, decoder_tokens: np.ndarray) -> np.ndarray:
    """HF logits for padded (id 0) encoder inputs, as users call the model."""
    import torch

    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(encoder_tokens),
            attention_mask=torch.tensor(encoder_tokens != 0).long(),
            decoder_input_ids=torch.tensor(decoder_tokens),
        )
    return out.logits.numpy()


def padded_batch(lengths: list[int], vocab_size: int, seed: int = 0) -> np.ndarray:
    """Random token ids (2..vocab) with the given lengths, right-padded with 0."""
    rng = np.random.default_rng(seed)
    batch = np.zeros((len(lengths), max(lengths)), np.int32)
    for row, length in enumerate(lengths):
        batch[row, :length] = rng.integers(2, vocab_size, size=length)
    return batch


@functools.cache
def jitted_apply(config, enable_dropout: bool = False):
    """`MT5(config).apply` compiled once per config, shared by all test modules (op-by-op
    dispatch of an unjitted model is far slower)."""

    def apply(params, enc, dec, rng=None, **kw):
        rngs = {"dropout": rng} if rng is not None else None
        return mt5.MT5(config).apply(
            {"params": params}, enc, dec, enable_dropout=enable_dropout, rngs=rngs, **kw
        )

    return jax.jit(apply)


def flax_logits(params, enc, dec, config=TINY, **kw) -> np.ndarray:
    return np.asarray(jitted_apply(config)(params, np.asarray(enc), np.asarray(dec), **kw))


def t5x_tree(params) -> dict:
    """Nested dict of numpy arrays (T5X's `target`)."""
    return jax.tree_util.tree_map(np.asarray, params)


def write_t5x_checkpoint(directory: pathlib.Path, params, step: int = 1000) -> pathlib.Path:
    """Writes `params` in T5X's layout (t5x/checkpoints.py): `checkpoint_<step>/checkpoint`
    msgpack {"version", "optimizer": {"target", "state"}}, large arrays as gzip zarr arrays
    named `target.<a>.<b>...` beside it (the msgpack holding their tensorstore spec), small
    ones inline, as T5X does for unpartitioned parameters.
    """
    import flax
    import tensorstore as ts

    ckpt = directory / f"checkpoint_{step}"
    ckpt.mkdir(parents=True)
    flat = flax.traverse_util.flatten_dict(t5x_tree(params), sep="/")
    target = {}
    for name, array in flat.items():
        if array.ndim == 1:
            target[name] = array  # inline in the msgpack
            continue
        zarr_name = "target." + name.replace("/", ".")
        metadata = {
            "compressor": {"id": "gzip"},
            "shape": list(array.shape),
            "chunks": list(array.shape),
        }
        spec = {
            "driver": "zarr",
            "dtype": "float32",
            "kvstore": {"driver": "file", "path": str(ckpt / zarr_name)},
            "metadata": metadata,
        }
        store = ts.open(spec, create=True, open=True).result()
        store.write(array).result()
        # T5X records the path relative to the checkpoint directory.
        target[name] = {**spec, "kvstore": {"driver": "file", "path": zarr_name}}
    state = {
        "version": 3,
        "optimizer": {
            "target": flax.traverse_util.unflatten_dict(target, sep="/"),
            "state": {"step": np.int32(step), "param_states": {}},
        },
    }
    (ckpt / "checkpoint").write_bytes(flax.serialization.msgpack_serialize(state))
    return ckpt


def write_runner_steps(model_dir: pathlib.Path, config, steps, best: int | None = None):
    """A MODEL_DIR as the trainer's store writes it: for each step, the parameters of
    `init_params(config, PRNGKey(0))` times the step, with `best` marked. Returns those
    unscaled parameters."""
    from seahorse_t5x.runner import checkpointing

    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    store = checkpointing.CheckpointStore(model_dir, keep=len(steps))
    for step in steps:
        store.save(
            step,
            jax.tree.map(lambda x, s=step: np.asarray(x) * s, params),
            {"count": np.zeros((), np.int32)},
            {"step": step, "batches_consumed": step},
            {"model_config": config.to_dict(), "step": step},
        )
    if best is not None:
        store.mark_best(best, "roc_auc", 0.9)
    store.close()
    return params


def eos_tokens(lengths: list[int], seed: int = 0, vocab_size: int = TINY.vocab_size) -> list:
    """Random token inputs of these lengths, each ending in EOS (ids from 3: no pad/EOS/UNK)."""
    from seahorse_t5x import constants

    rng = np.random.default_rng(seed)
    out = []
    for length in lengths:
        ids = rng.integers(3, vocab_size, size=length).astype(np.int32)
        ids[-1] = constants.EOS_ID
        out.append(ids)
    return out


def pad_rows(tokens: list, length: int) -> np.ndarray:
    """The inputs as one [rows, length] batch, zero-padded."""
    batch = np.zeros((len(tokens), length), np.int32)
    for row, ids in enumerate(tokens):
        batch[row, : len(ids)] = ids
    return batch


def hf_float64_label_logits(model, batch: np.ndarray, label_ids) -> np.ndarray:
    """HF's logits of `label_ids` at the first decoder step, computed in float64 (the model
    is put back in float32 after)."""
    import torch

    reference = model.double()
    try:
        with torch.no_grad():
            ids = torch.tensor(batch, dtype=torch.long)
            logits = reference(
                input_ids=ids,
                attention_mask=(ids != 0).long(),
                decoder_input_ids=torch.zeros((len(batch), 1), dtype=torch.long),
            ).logits[:, 0, list(label_ids)]
    finally:
        model.float()
    return logits.numpy()


def packed_rows(tokens: list, rows: list[list[int]], length: int):
    """(tokens, segment ids, decoder segment ids) of inputs packed into rows as the engine packs
    them: input k of a row holds segment id k, one decoder start per input."""
    batch = np.zeros((len(rows), length), np.int32)
    segments = np.zeros((len(rows), length), np.int32)
    decoder_segments = np.zeros((len(rows), max(len(r) for r in rows)), np.int32)
    for row, members in enumerate(rows):
        offset = 0
        for k, index in enumerate(members, start=1):
            batch[row, offset : offset + len(tokens[index])] = tokens[index]
            segments[row, offset : offset + len(tokens[index])] = k
            offset += len(tokens[index])
        decoder_segments[row, : len(members)] = np.arange(1, len(members) + 1)
    return batch, segments, decoder_segments
