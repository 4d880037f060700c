"""SeqIO tasks for the NLI baselines: mt5_XNLI (XNLI) and t5_NLI (the NLI mixture).

Every NLI example becomes a binary attribution example: premise -> `premise`, hypothesis ->
`hypothesis`, entailment -> label 1 (target "1"), neutral or contradiction -> 0, then the
same `premise: ... hypothesis: ...` chain as SEAHORSE (`preprocessors.py`), so a model
trained here scores SEAHORSE's Q4 tasks directly. TFDS rows without a gold label (-1, as
in SNLI) are filtered out.

Registered names (docs/benchmarks.md):

  xnli_zeroshot_train             train: TFDS multi_nli train; validation: validation_matched
  xnli_translate_train.{lang}     train: TFDS xtreme_xnli (MNLI machine-translated), one
                                  language; validation: TFDS xnli validation, same language
  xnli_translate_train            mixture of the 15 languages, equal rates
  xnli_eval.{lang}                validation / test: TFDS xnli, one of its 15 languages
  nli_snli, nli_mnli, nli_scitail, nli_paws   TFDS snli, multi_nli, sci_tail, paws_wiki
  nli_fever, nli_vitaminc         local JSON Lines releases (data/benchmarks/nli.py)
  nli_mixture                     the six, mixed in proportion to their training sizes

TFDS reads its data from its default folder (`TFDS_DATA_DIR`); the FEVER-NLI and VitaminC
folders come from SEAHORSE_FEVER_NLI_DIR / SEAHORSE_VITAMINC_DIR (or gin). Everything is
read when a dataset is built, never at import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import seqio
import tensorflow as tf
import tensorflow_datasets as tfds
from absl import logging

from seahorse_t5x import constants
from seahorse_t5x.data import benchmarks
from seahorse_t5x.tasks import premise_hypothesis

XNLI_LANGUAGES: tuple[str, ...] = (
    "ar",
    "bg",
    "de",
    "el",
    "en",
    "es",
    "fr",
    "hi",
    "ru",
    "sw",
    "th",
    "tr",
    "ur",
    "vi",
    "zh",
)
# TFDS names with versions, so a newer TFDS release cannot change the data silently.
TFDS_XNLI = "xnli:1.1.0"
TFDS_XTREME_XNLI = "xtreme_xnli:1.1.0"
TFDS_MNLI = "multi_nli:1.1.0"
TFDS_SNLI = "snli:1.1.0"
TFDS_SCITAIL = "sci_tail:1.0.0"
TFDS_PAWS = "paws_wiki/labeled_final_raw:1.1.0"

# The question whose tasks an NLI model stands in for: attribution.
NLI_QUESTION = 4

# Training-set sizes of the mixture's sources (examples with a gold label): the mixing
# rates, as in T5's example-proportional mixing, without reading the data at import.
NLI_MIXTURE_RATES: dict[str, float] = {
    "nli_snli": 549_367,
    "nli_mnli": 392_702,
    "nli_fever": 208_346,
    "nli_scitail": 23_596,
    "nli_paws": 49_401,
    "nli_vitaminc": 370_653,
}

# The map and filter functions hold no Python control flow on tensors: converting them with
# autograph on every dataset build is wasted time.
_no_autograph = tf.autograph.experimental.do_not_convert

_OUTPUT_SIGNATURE = premise_hypothesis.SCHEMA_SIGNATURE


def _schema(
    premise: tf.Tensor, hypothesis: tf.Tensor, label: tf.Tensor, language: str, dataset: str
) -> dict[str, tf.Tensor]:
    return {
        "premise": premise,
        "hypothesis": hypothesis,
        "label": tf.cast(label, tf.int64),
        "question": tf.constant(NLI_QUESTION, tf.int64),
        "gem_id": tf.constant(""),
        "language": tf.constant(language),
        "dataset": tf.constant(dataset),
        "system": tf.constant(""),
    }


def _entailment_is_yes(label: tf.Tensor) -> tf.Tensor:
    # TFDS NLI class order: 0 entailment (sci_tail: 0 entails), then neutral, contradiction.
    return tf.cast(tf.equal(label, 0), tf.int64)


@_no_autograph
def _has_gold_label(x: Mapping[str, tf.Tensor]) -> tf.Tensor:
    return tf.greater_equal(x["label"], 0)


def _load(tfds_name: str, split: str, shuffle_files: bool, seed: int | None) -> tf.data.Dataset:
    # The seed fixes TFDS's file order when files are shuffled (same seed, same order).
    return tfds.load(
        tfds_name,
        split=split,
        shuffle_files=shuffle_files,
        read_config=tfds.ReadConfig(shuffle_seed=seed),
    )


def pair_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    tfds_name: str,
    split_map: Mapping[str, str],
    dataset: str,
    premise_key: str = "premise",
    hypothesis_key: str = "hypothesis",
    positive_is_label_1: bool = False,
) -> tf.data.Dataset:
    """A TFDS sentence-pair dataset in the shared schema (English).

    `positive_is_label_1` is for PAWS, whose class 1 is "paraphrase" (the consistent case);
    the NLI datasets put entailment at class 0.
    """
    ds = _load(tfds_name, split_map[split], shuffle_files, seed).filter(_has_gold_label)

    @_no_autograph
    def to_schema(x):
        label = (
            tf.cast(x["label"], tf.int64) if positive_is_label_1 else _entailment_is_yes(x["label"])
        )
        return _schema(x[premise_key], x[hypothesis_key], label, "en", dataset)

    return ds.map(to_schema, num_parallel_calls=tf.data.AUTOTUNE)


@_no_autograph
def xnli_language(x: Mapping[str, tf.Tensor], language: str, dataset: str) -> dict:
    """One language of an XNLI-style example (`premise`: Translation, `hypothesis`:
    TranslationVariableLanguages); the hypothesis is "" when the language is missing."""
    hypothesis = x["hypothesis"]
    found = tf.boolean_mask(hypothesis["translation"], tf.equal(hypothesis["language"], language))
    text = tf.concat([found, tf.constant([""])], axis=0)[0]
    return _schema(x["premise"][language], text, _entailment_is_yes(x["label"]), language, dataset)


def xnli_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    language: str,
    train_source: str | None = None,
) -> tf.data.Dataset:
    """XNLI in one language: `train` from `train_source` (xtreme_xnli), else TFDS xnli."""
    if split == "train":
        if train_source is None:
            raise ValueError("XNLI has no train split: use xnli_zeroshot_train or translate-train")
        tfds_name, name = train_source, "xtreme_xnli"
    else:
        tfds_name, name = TFDS_XNLI, "xnli"
    ds = _load(tfds_name, split, shuffle_files, seed).filter(_has_gold_label)
    ds = ds.map(functools.partial(xnli_language, language=language, dataset=name))
    return ds.filter(_no_autograph(lambda x: tf.strings.length(x["hypothesis"]) > 0))


def local_nli_dataset(
    split: str, shuffle_files: bool, seed: int | None = None, *, name: str
) -> tf.data.Dataset:
    """A local FEVER-NLI or VitaminC split (JSON Lines), read through the benchmark reader."""
    del shuffle_files, seed  # one file per split; SeqIO shuffles examples
    result = benchmarks.read_nli_jsonl(benchmarks.nli_split_file(name, split), name)
    if result.dropped:
        logging.warning("%s", result.summary())
    examples = result.examples

    def rows():
        for e in examples:
            yield {
                **{k: e[k] for k in _OUTPUT_SIGNATURE if k != "question"},
                "question": NLI_QUESTION,
            }

    return tf.data.Dataset.from_generator(rows, output_signature=_OUTPUT_SIGNATURE)


# ----------------------------------------------------------------------------- registry


def _add_task(name: str, dataset_fn: Callable[..., tf.data.Dataset], splits) -> None:
    """A training-format task (target "1"/"0"), evaluated by decoding ("1"/"0" accuracy)."""
    premise_hypothesis.add_premise_hypothesis_task(
        name,
        seqio.FunctionDataSource(dataset_fn=dataset_fn, splits=splits),
        premise_hypothesis.output_features(),
        score_mode=False,
    )


def xnli_task_names() -> list[str]:
    return (
        ["xnli_zeroshot_train"]
        + [f"xnli_translate_train.{lang}" for lang in XNLI_LANGUAGES]
        + [f"xnli_eval.{lang}" for lang in XNLI_LANGUAGES]
    )


def nli_task_names() -> list[str]:
    return list(NLI_MIXTURE_RATES)


def task_names() -> list[str]:
    """Every task name this module registers."""
    return xnli_task_names() + nli_task_names()


MIXTURE_NAMES: tuple[str, ...] = ("xnli_translate_train", "nli_mixture")


def _register() -> None:
    mnli_splits = {"train": "train", "validation": "validation_matched"}
    _add_task(
        "xnli_zeroshot_train",
        functools.partial(
            pair_dataset, tfds_name=TFDS_MNLI, split_map=mnli_splits, dataset="multi_nli"
        ),
        list(mnli_splits),
    )
    for lang in XNLI_LANGUAGES:
        _add_task(
            f"xnli_translate_train.{lang}",
            functools.partial(xnli_dataset, language=lang, train_source=TFDS_XTREME_XNLI),
            ["train", "validation"],
        )
        _add_task(
            f"xnli_eval.{lang}",
            functools.partial(xnli_dataset, language=lang),
            ["validation", "test"],
        )
    seqio.MixtureRegistry.add(
        "xnli_translate_train",
        [f"xnli_translate_train.{lang}" for lang in XNLI_LANGUAGES],
        default_rate=1.0,
    )

    three_splits = {s: s for s in constants.SPLITS}
    for name, tfds_name, split_map, keys in (
        ("nli_snli", TFDS_SNLI, three_splits, {}),
        ("nli_mnli", TFDS_MNLI, mnli_splits, {}),
        ("nli_scitail", TFDS_SCITAIL, three_splits, {}),
        (
            "nli_paws",
            TFDS_PAWS,
            three_splits,
            {
                "premise_key": "sentence1",
                "hypothesis_key": "sentence2",
                "positive_is_label_1": True,
            },
        ),
    ):
        _add_task(
            name,
            functools.partial(
                pair_dataset,
                tfds_name=tfds_name,
                split_map=split_map,
                dataset=name.removeprefix("nli_"),
                **keys,
            ),
            list(split_map),
        )
    for name in ("fever", "vitaminc"):
        _add_task(
            f"nli_{name}",
            functools.partial(local_nli_dataset, name=name),
            list(constants.SPLITS),
        )
    seqio.MixtureRegistry.add(
        "nli_mixture", [(name, rate) for name, rate in NLI_MIXTURE_RATES.items()]
    )


_register()
