"""Local NLI releases (FEVER-NLI, VitaminC) in JSON Lines, for the NLI tasks (docs/benchmarks.md).

Folders come from arguments, gin (`seahorse_t5x.data.benchmarks.benchmark_paths.fever_nli_dir`,
`.vitaminc_dir`) or `SEAHORSE_FEVER_NLI_DIR` and `SEAHORSE_VITAMINC_DIR`.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

from seahorse_t5x import errors, fileio
from seahorse_t5x.data.benchmarks import common

ENV_FEVER_NLI_DIR = "SEAHORSE_FEVER_NLI_DIR"
ENV_VITAMINC_DIR = "SEAHORSE_VITAMINC_DIR"

NLI_SOURCES: dict[str, str] = {
    "fever": (
        "the FEVER-NLI release of Nie et al. 2019 (github.com/easonnie/combine-FEVER-NSMN, "
        "nli_fever.zip: train/dev/test_fitems.jsonl with query, context, label)"
    ),
    "vitaminc": (
        "VitaminC (github.com/TalSchuster/VitaminC, vitaminc.zip: train/dev/test.jsonl with "
        "claim, evidence, label; also HF tals/vitaminc)"
    ),
}
_NLI_PREMISE_KEYS: tuple[str, ...] = ("premise", "evidence", "context")
_NLI_HYPOTHESIS_KEYS: tuple[str, ...] = ("hypothesis", "claim", "query")
_NLI_LABEL_KEYS: tuple[str, ...] = ("label", "gold_label")
_NLI_POSITIVE = frozenset({"entailment", "entails", "supports", "support"})
_NLI_NEGATIVE = frozenset(
    {"neutral", "contradiction", "refutes", "refute", "not enough info", "nei"}
)


def nli_dir(name: str, path: str | None = None) -> str:
    """The folder of a local NLI release (`fever` or `vitaminc`): argument, gin, environment."""
    envs = {"fever": ENV_FEVER_NLI_DIR, "vitaminc": ENV_VITAMINC_DIR}
    if name not in envs:
        raise errors.UserError(f"unknown NLI release {name!r}: expected one of {sorted(envs)}")
    path = path or common.benchmark_paths()[name]
    return common.resolve_path(path, envs[name], f"{name} NLI folder", NLI_SOURCES[name])


# SeqIO split -> file names tried in an NLI release folder, first found wins (VitaminC
# ships train/dev/test.jsonl, the FEVER-NLI release train/dev/test_fitems.jsonl).
NLI_SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.jsonl", "train_fitems.jsonl"),
    "validation": ("validation.jsonl", "dev.jsonl", "dev_fitems.jsonl"),
    "test": ("test.jsonl", "test_fitems.jsonl"),
}


def nli_split_file(name: str, split: str, directory: str | None = None) -> pathlib.Path:
    """The JSON Lines file of one split of a local NLI release.

    Raises:
      UserError: no file for the split in the folder (the message lists the names tried).
    """
    folder = pathlib.Path(nli_dir(name, directory))
    candidates = NLI_SPLIT_FILES.get(split, (f"{split}.jsonl",))
    for candidate in candidates:
        if (folder / candidate).is_file():
            return folder / candidate
    raise errors.UserError(
        f"no {split} file for {name} in {folder} (tried {', '.join(candidates)}). "
        f"Get it from {NLI_SOURCES[name]}."
    )


def nli_label(value: object) -> int | None:
    """A string NLI label as 1 (entailment/SUPPORTS) or 0 (neutral, contradiction, REFUTES,
    NOT ENOUGH INFO); None for anything else (integer labels are ambiguous across releases)."""
    if not isinstance(value, str):
        return None
    word = value.strip().lower().replace("_", " ")
    if word in _NLI_POSITIVE:
        return 1
    if word in _NLI_NEGATIVE:
        return 0
    return None


def _first_key(record: dict, keys: Sequence[str]) -> str | None:
    return next((k for k in keys if k in record), None)


def read_nli_jsonl(path: str | os.PathLike, name: str) -> common.ReadResult:
    """Reads a local NLI file (FEVER-NLI, VitaminC) in JSON Lines.

    Fields: premise (`premise`, `evidence` or `context`), hypothesis (`hypothesis`, `claim`
    or `query`), label (`label` or `gold_label`: a string, see `nli_label`). Bad lines are
    dropped and reported.
    """
    p = common.existing_file(path, f"{name} NLI file", NLI_SOURCES.get(name, "its release"))
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line_number, record in fileio.iter_json_lines(p):
        if isinstance(record, errors.DataError):
            drops.append(record)
            continue
        keys = [
            _first_key(record, k)
            for k in (_NLI_PREMISE_KEYS, _NLI_HYPOTHESIS_KEYS, _NLI_LABEL_KEYS)
        ]
        if None in keys:
            missing = ["premise", "hypothesis", "label"][keys.index(None)]
            drops.append(errors.DataError(str(p), line_number, missing, "field missing"))
            continue
        premise_key, hypothesis_key, label_key = keys
        label = nli_label(record[label_key])
        if label is None:
            drops.append(
                errors.DataError(
                    str(p), line_number, label_key, f"{record[label_key]!r} is not a label"
                )
            )
            continue
        premise = str(record[premise_key] or "").strip()
        hypothesis = str(record[hypothesis_key] or "").strip()
        if not premise or not hypothesis:
            field = premise_key if not premise else hypothesis_key
            drops.append(errors.DataError(str(p), line_number, field, "empty text"))
            continue
        examples.append(
            {
                "premise": premise,
                "hypothesis": hypothesis,
                "label": label,
                "gem_id": str(record.get("id", f"{name}-{line_number}")),
                "language": "en",
                "dataset": name,
                "system": "",
            }
        )
    if not examples and not drops:
        raise fileio.empty_file_error(
            p, "one JSON object per line with a premise, a hypothesis and a label"
        )
    return common.ReadResult(str(p), examples, drops)
