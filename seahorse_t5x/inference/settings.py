"""How a checkpoint is scored, in one object: `ScoringSettings`, shared by `score`,
`evaluate`, `score_file` and `Scorer.from_pretrained`, and the compile-cache folder.

    settings = ScoringSettings(input_length=512, batch_size=8, long_inputs="windows")
    settings = settings.checked()    # every mistake named by its setting, no model read

Importing this module imports neither JAX nor TensorFlow (`seahorse-t5x score --help`
stays fast); `create_mesh` and `enable_compilation_cache` import JAX when called.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import precision, windows

# The compiled programs' folder: this variable, else `$XDG_CACHE_HOME/seahorse-t5x/jax`
# (`~/.cache/seahorse-t5x/jax`).
ENV_COMPILATION_CACHE = "SEAHORSE_COMPILATION_CACHE"
# Rows per batch at the input length, over all devices (shorter inputs batch more rows: the
# same tokens per batch), in `score`, `evaluate` and `Scorer` alike. `auto` chooses by
# platform (`choose_batch_size`): 1 on CPUs, whose caches hold one row's activations
# (1.45-1.56x faster than 8 on a 2-core Xeon, PERFORMANCE.md), 8 on GPUs and TPUs.
AUTO_BATCH_SIZE = "auto"
DEFAULT_BATCH_SIZE = AUTO_BATCH_SIZE
CPU_BATCH_SIZE = 1
ACCELERATOR_BATCH_SIZE = 8
COMPUTE_DTYPES = precision.DTYPES
# int8 is weight-only (per-output-channel scales; `inference/quantize.py`).
PARAM_DTYPES = (*COMPUTE_DTYPES, "int8")
DEFAULT_PARAM_DTYPE = "float32"

# `compilation_cache`: True (the default folder), False or None (off), or a folder.
CompilationCache = bool | str | os.PathLike | None


@dataclasses.dataclass(frozen=True)
class ScoringSettings:
    """What decides how text pairs become P(yes) (the checkpoint and the rows aside).

    Attributes:
      vocab: a SentencePiece `.model` path, `demo`, a vocabulary object, or None (the
        vocabulary the checkpoint records or ships, else mT5's: `vocab.RESOLUTION_ORDER`).
      input_length: input tokens per row, EOS included (None: the length a runner
        checkpoint was trained with, else 2048).
      batch_size: rows per batch at `input_length`, over all devices, or `auto` (1 on
        CPUs, 8 on GPUs and TPUs: `choose_batch_size`).
      dtype: the model's matrix products: `auto` (bfloat16 on GPUs and TPUs, float32 on
        CPUs), `float32` or `bfloat16`.
      param_dtype: the weights on the devices: `float32`, `bfloat16` or `int8`.
      truncation: `keep_summary` (cut the article) or `right` (cut the joined input's end).
      long_inputs: `truncate`, or `windows` (articles split into windows beside the summary).
      window_overlap: sentences consecutive windows share.
      window_aggregate: a row's score from its windows: `max` or `mean`.
      mesh: `(data, model)` axis sizes, or `"data=N,model=M"`; None: every device on data.
      label_words: the (yes, no) answer words, as a pair or `"Yes,No"`; None: `1`, `0`.
      packing: several inputs per row (one compiled shape) instead of length buckets.
      compilation_cache: keep compiled programs on disk: True (`$SEAHORSE_COMPILATION_CACHE`,
        else ~/.cache/seahorse-t5x/jax), a folder, or False (compile every run afresh).
    """

    vocab: Any = None
    input_length: int | None = None
    batch_size: int | str = DEFAULT_BATCH_SIZE
    dtype: str = precision.AUTO
    param_dtype: str = DEFAULT_PARAM_DTYPE
    truncation: str = input_format.TRUNCATION_KEEP_SUMMARY
    long_inputs: str = windows.LONG_INPUTS_TRUNCATE
    window_overlap: int = windows.DEFAULT_OVERLAP
    window_aggregate: str = windows.AGGREGATE_MAX
    mesh: tuple[int, int] | str | None = None
    label_words: tuple[str, str] | str | None = None
    packing: bool = False
    compilation_cache: CompilationCache = True

    def checked(self) -> ScoringSettings:
        """These settings with `mesh` and `label_words` parsed, once each is checked.

        Raises:
          UserError: naming the setting that cannot work.
        """
        check_batch_size(self.batch_size)
        if self.input_length is not None:
            input_format.check_input_length(self.input_length, "input_length")
        if self.dtype not in precision.CHOICES:
            precision.choose(self.dtype, platform="cpu")  # raises, naming the choices
        if self.param_dtype not in PARAM_DTYPES:
            raise errors.UserError(
                f"param_dtype must be one of {', '.join(PARAM_DTYPES)}, got {self.param_dtype!r}"
            )
        input_format.check_truncation(self.truncation)
        check_windows(self.long_inputs, self.window_overlap, self.window_aggregate, self.truncation)
        return dataclasses.replace(
            self, mesh=mesh_shape(self.mesh), label_words=answer_words(self.label_words)
        )

    @property
    def windowed(self) -> bool:
        """Whether long articles are scored in windows."""
        return self.long_inputs == windows.LONG_INPUTS_WINDOWS

    def scorer_arguments(self) -> dict[str, Any]:
        """The `Scorer` arguments these settings give, once `checked` (their `label_words`
        and `mesh` are parsed there: the `Scorer` makes its device mesh from the shape)."""
        return {
            "mesh": self.mesh,
            "vocab": self.vocab,
            "input_length": self.input_length,
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "truncation": self.truncation,
            "param_dtype": self.param_dtype,
            "packing": self.packing,
            "label_words": self.label_words,
            "compilation_cache": self.compilation_cache,
        }


def settings_from(settings: ScoringSettings | None, values: dict[str, Any]) -> ScoringSettings:
    """`settings` (default: the defaults) with the named `values` replaced, checked.

    Raises:
      UserError: for a name that is no setting, or a value `ScoringSettings.checked` refuses.
    """
    known = {f.name for f in dataclasses.fields(ScoringSettings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise errors.UserError(
            f"no scoring setting named {unknown[0]!r}; the settings are {', '.join(sorted(known))}"
        )
    return dataclasses.replace(settings or ScoringSettings(), **values).checked()


def check_batch_size(value: object) -> int | str:
    """Returns `value` when it can be a batch size (an integer >= 1, or `auto`), else raises
    UserError."""
    if value == AUTO_BATCH_SIZE:
        return AUTO_BATCH_SIZE
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.UserError(f"batch_size must be `auto` or at least 1, got {value!r}")
    return value


def choose_batch_size(value: int | str, platform: str) -> int:
    """The rows per batch `value` means on `platform` (`cpu`, `gpu`, `tpu`, ...): `auto` is
    1 on CPUs and 8 elsewhere; a number is itself.

    Raises:
      UserError: for a value `check_batch_size` refuses.
    """
    value = check_batch_size(value)
    if value != AUTO_BATCH_SIZE:
        return value
    return CPU_BATCH_SIZE if platform.lower() == "cpu" else ACCELERATOR_BATCH_SIZE


def parse_batch_size(text: str) -> int | str:
    """A batch size written as text (`--batch_size`): `auto` or an integer, which
    `check_batch_size` then checks.

    Raises:
      UserError: for text that is neither.
    """
    if text.strip().lower() == AUTO_BATCH_SIZE:
        return AUTO_BATCH_SIZE
    try:
        return int(text)
    except ValueError:
        raise errors.UserError(f"batch_size must be `auto` or an integer, got {text!r}") from None


def check_windows(long_inputs: str, overlap: object, aggregate: str, truncation: str) -> None:
    """Refuses window settings that cannot work, before the model or the data is read."""
    windows.check_long_inputs(long_inputs)
    windows.check_overlap(overlap)
    windows.check_aggregate(aggregate)
    changed = [
        name
        for name, value, default in (
            ("window_overlap", overlap, windows.DEFAULT_OVERLAP),
            ("window_aggregate", aggregate, windows.AGGREGATE_MAX),
        )
        if value != default
    ]
    if changed and long_inputs != windows.LONG_INPUTS_WINDOWS:
        # Alone they would change nothing: the articles are cut, not windowed.
        raise errors.UserError(
            f"{' and '.join(changed)} {'apply' if len(changed) > 1 else 'applies'} only with "
            f"long_inputs {windows.LONG_INPUTS_WINDOWS} "
            f"(got long_inputs {long_inputs})"
        )
    if long_inputs == windows.LONG_INPUTS_WINDOWS and truncation != (
        input_format.TRUNCATION_KEEP_SUMMARY
    ):
        raise errors.UserError(
            "long_inputs windows keeps every summary whole: it needs truncation "
            f"{input_format.TRUNCATION_KEEP_SUMMARY}, got {truncation}"
        )


def mesh_shape(mesh: tuple[int, int] | Sequence[int] | str | None) -> tuple[int, int] | None:
    """(data, model) from a shape or `data=N,model=M`; None: every device on data.

    Raises:
      UserError: for a text that is no mesh, or sizes below 1.
    """
    if mesh is None or mesh == "":
        return None
    if isinstance(mesh, str):
        from seahorse_t5x.model import partitioning

        return partitioning.parse_mesh(mesh)
    shape = tuple(mesh)
    if len(shape) != 2 or not all(isinstance(s, int) and s >= 1 for s in shape):
        raise errors.UserError(f"mesh must be (data, model) sizes >= 1, got {mesh!r}")
    return shape[0], shape[1]


def answer_words(words: tuple[str, str] | Sequence[str] | str | None) -> tuple[str, str] | None:
    """(yes word, no word) from a pair or `"Yes,No"`, checked; None when not given."""
    if not words:
        return None
    from seahorse_t5x.formats import vocab

    return vocab.parse_answer_words(words if isinstance(words, str) else ",".join(words))


def label_words_text(words: tuple[str, str] | Sequence[str] | str | None) -> str | None:
    """The answer words as a run records them, or None: `"Yes,No"` whatever the spacing
    they were given with (`"Yes, No"`, `(" Yes", "No")`), so a resumed run given the same
    words matches the record of the run it continues. The one place words are spelt for a
    record; words `answer_words` refuses are kept as given (refused where they are used).
    """
    if not words:
        return None
    text = words if isinstance(words, str) else ",".join(words)
    try:
        return ",".join(answer_words(text))
    except errors.UserError:
        return text


def create_mesh(shape: tuple[int, int] | None):
    """The device mesh of a `(data, model)` shape: every device on `data` when None.

    Before JAX starts, its CPU backend is given one device per core
    (`partitioning.one_cpu_device_per_core`)."""
    from seahorse_t5x.model import partitioning

    partitioning.one_cpu_device_per_core()
    if shape is None:
        return partitioning.create_mesh()
    data, model = shape
    return partitioning.create_mesh(
        partitioning.MeshConfig(model_parallel=model, data_parallel=data)
    )


def default_compilation_cache() -> pathlib.Path:
    """`$XDG_CACHE_HOME/seahorse-t5x/jax`, else `~/.cache/seahorse-t5x/jax`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "seahorse-t5x" / "jax"


def compilation_cache_dir(setting: CompilationCache = True) -> pathlib.Path | None:
    """The folder of compiled programs for a `compilation_cache` setting: a folder as given;
    True: `$SEAHORSE_COMPILATION_CACHE`, else the user's cache folder; False/None: none."""
    if setting is None or setting is False:
        return None
    if setting is not True:
        return pathlib.Path(setting)
    chosen = os.environ.get(ENV_COMPILATION_CACHE)
    return pathlib.Path(chosen) if chosen else default_compilation_cache()


def enable_compilation_cache(setting: CompilationCache = True) -> pathlib.Path | None:
    """Keeps this process's compiled programs in `compilation_cache_dir(setting)` (imports
    JAX); returns the folder, or None when the setting turns the cache off."""
    directory = compilation_cache_dir(setting)
    if directory is not None:
        from seahorse_t5x.inference import engine

        engine.enable_compilation_cache(directory)
    return directory
