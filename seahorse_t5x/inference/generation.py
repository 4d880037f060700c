"""Text generation with a checkpoint: greedy decoding or beam search (`model/decoding.py`)
over batches of similar input lengths.

Inputs are grouped as the scoring engine groups them (`batching.plan_batches` over the
`batching.bucket_lengths` ladder: longest first, each batch padded to its bucket, more rows
for shorter buckets), so a job compiles a few shapes and pads little. Each batch decodes
until every row has written EOS or `max_output_length` tokens. On a mesh the rows are split
over its `data` axis (the parameters replicated); outputs are put back in input order.

An input longer than `input_length` is refused, never cut here: callers cut what may be cut
(the source of an explanation prompt, `formats/error_analysis.py`) before they get here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import arguments, errors
from seahorse_t5x.formats import vocab as vocab_lib
from seahorse_t5x.inference import batching, precision
from seahorse_t5x.model import checkpoint_layout, checkpoints, decoding, partitioning
from seahorse_t5x.model.configs import MT5Config

# TIGERScore's context (1,024 tokens) and a budget for a few errors' analyses.
DEFAULT_INPUT_LENGTH = 1024
DEFAULT_MAX_OUTPUT_LENGTH = 512
# Rows per batch at `input_length`; shorter buckets get more (the same tokens a batch).
DEFAULT_BATCH_SIZE = 8
# Generation compiles a while-loop program per shape: the 1.4x ladder, half the shapes of
# the 1.2x one scoring uses.
GENERATION_LADDER = "1.4"


class Generator:
    """Generation of text (greedy, or beam search) from a checkpoint of any model family.

    Args:
      checkpoint: a checkpoint path or Hub name (`model.checkpoints.load_checkpoint`), or
        a loaded `(config, params)` pair (unscanned parameters).
      vocab: a SentencePiece vocabulary, a `.model` path, `demo`, or None (the resolution
        order of `formats/vocab.py`, with this checkpoint).
      input_length: the longest input in tokens (EOS included).
      max_output_length: the most tokens an output gets (EOS included).
      batch_size: rows per batch at `input_length`.
      dtype: the products' dtype: `float32`, `bfloat16` or `auto` (`precision.choose`).
      mesh: a device mesh whose `data` axis splits each batch's rows (default: one device).

    Raises:
      UserError: for a bad checkpoint, vocabulary, dtype or length.
    """

    def __init__(
        self,
        checkpoint: str | os.PathLike | tuple[MT5Config, Any],
        vocab: Any = None,
        input_length: int = DEFAULT_INPUT_LENGTH,
        max_output_length: int = DEFAULT_MAX_OUTPUT_LENGTH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dtype: str = precision.AUTO,
        mesh: Mesh | None = None,
    ) -> None:
        for name, value in (
            ("input_length", input_length),
            ("max_output_length", max_output_length),
            ("batch_size", batch_size),
        ):
            arguments.check_positive_int(name, value)
        platform = None if mesh is None else mesh.devices.flat[0].platform
        self.dtype_choice = precision.choose(dtype, platform)
        if isinstance(checkpoint, tuple):
            config, params = checkpoint
            config = config.replace(dtype=self.dtype_choice.dtype)
            path, meta = None, {}
        else:
            path = checkpoints.resolve(checkpoint)
            meta = checkpoints.load_meta(path)
            config, params = checkpoints.load_checkpoint(path, self.dtype_choice.dtype)
        # A runner checkpoint names the vocabulary it was trained with (`Scorer` alike).
        self.vocab = vocab_lib.get_vocabulary(
            vocab, trained_with=meta.get(checkpoint_layout.META_VOCABULARY), checkpoint=path
        )
        self.checkpoint_meta = meta
        vocab_lib.check_fits(
            self.vocab, config.vocab_size, "use the vocabulary the model was trained with"
        )
        self.config = config
        self.input_length = input_length
        self.max_output_length = max_output_length
        self.batch_size = batch_size
        self.mesh = mesh
        # On the devices once, not sent with every batch.
        sharding = None if mesh is None else partitioning.replicated(mesh)
        self.params = jax.device_put(params, sharding)
        self.screen = None  # the int8 projection a CPU's float32 steps screen with
        if decoding.screens_vocabulary(config, self._platform):
            kernel = self.params["decoder"]["logits_dense"]["kernel"]
            self.screen = jax.device_put(decoding.vocabulary_screen(kernel), sharding)

    @property
    def _platform(self) -> str | None:
        return None if self.mesh is None else self.mesh.devices.flat[0].platform

    @property
    def _row_multiple(self) -> int:
        return 1 if self.mesh is None else int(self.mesh.shape[partitioning.DATA_AXIS])

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text with EOS, refused in one line when one is too long.

        Raises:
          UserError: for a bare string, a non-string, or a text over `input_length` tokens.
        """
        if isinstance(texts, str):
            raise errors.UserError("texts must be a sequence of strings, not one string")
        rows = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise errors.UserError(f"text {i} is {type(text).__name__}, not a string")
            ids = list(self.vocab.encode(text)) + [decoding.EOS_ID]
            if len(ids) > self.input_length:
                raise errors.UserError(
                    f"text {i} has {len(ids)} tokens, over input_length {self.input_length}; "
                    "cut it before generating"
                )
            rows.append(ids)
        return rows

    def generate_ids(
        self,
        inputs: Sequence[Sequence[int]],
        progress: Callable[[int], None] | None = None,
        num_beams: int = 1,
    ) -> list[list[int]]:
        """The generated ids of each input (EOS and padding dropped), in input order.

        Args:
          inputs: token ids, each ending in EOS and at most `input_length` long.
          progress: called with the number of inputs done after each batch.
          num_beams: 1: greedy decoding; more: beam search with that many beams a row
            (`decoding.beam_search`, HF `generate(num_beams=...)`'s).
        """
        arguments.check_positive_int("num_beams", num_beams)
        lengths = [len(ids) for ids in inputs]
        if not lengths:
            return []
        if max(lengths) > self.input_length:
            raise errors.UserError(
                f"an input has {max(lengths)} tokens, over input_length {self.input_length}"
            )
        buckets = batching.bucket_lengths(self.input_length, GENERATION_LADDER)
        batches = batching.plan_batches(
            lengths, buckets, self.batch_size * self.input_length, self._row_multiple
        )
        program = self._decoder(num_beams)
        outputs: list[list[int]] = [[] for _ in inputs]
        for batch in batches:
            tokens = np.zeros((batch.rows, batch.length), np.int32)
            for row, index in enumerate(batch.indices):
                tokens[row, : lengths[index]] = inputs[index]
            if self.mesh is not None:
                tokens = jax.device_put(tokens, partitioning.batch_sharding(self.mesh))
            generated = decoding.strip(program(self.params, tokens))
            for row, index in enumerate(batch.indices):
                outputs[index] = generated[row]
            if progress is not None:
                progress(len(batch.indices))
        return outputs

    def _decoder(self, num_beams: int) -> Callable[..., Any]:
        """The compiled decoding of a batch, `(params, tokens) -> tokens`: greedy
        (through the int8 screen where there is one) or beam search (compiled per beam
        count; each bucket's shape compiles once)."""
        if num_beams == 1:
            greedy = decoding.compiled_greedy_search(
                self.config, self.max_output_length, platform=self._platform
            )
            return functools.partial(greedy, screen=self.screen)
        return decoding.compiled_beam_search(
            self.config, self.max_output_length, num_beams, platform=self._platform
        )

    def generate(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
        num_beams: int = 1,
    ) -> list[str]:
        """The generated text of each input text, in input order (`generate_ids`)."""
        ids = self.generate_ids(self.encode(texts), progress, num_beams)
        return [self.vocab.decode(row) for row in ids]
