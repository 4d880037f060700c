"""XNLI and NLI-mixture tasks on mocked TFDS builders (real builders, rows written here)."""

import json

import numpy as np
import pytest
import seqio
import tensorflow as tf
import tensorflow_datasets as tfds

from seahorse_t5x.formats import vocab
from seahorse_t5x.tasks import nli

LENGTHS = {"inputs": 128, "targets": 4}
LANGS = nli.XNLI_LANGUAGES


def _xnli_row(i: int, label: int, missing: str | None = None) -> dict:
    hyp_langs = [lang for lang in LANGS if lang != missing]
    return {
        "premise": {lang: f"{lang} premise {i}" for lang in LANGS},
        "hypothesis": {
            "language": np.array(hyp_langs, dtype=object),
            "translation": np.array([f"{lang} hypothesis {i}" for lang in hyp_langs], dtype=object),
        },
        "label": np.int64(label),
    }


# Rows per TFDS builder name; every split of a builder yields the same rows.
ROWS = {
    "xnli": [_xnli_row(0, 0), _xnli_row(1, 1), _xnli_row(2, 2, missing="de")],
    "xtreme_xnli": [_xnli_row(5, 2), _xnli_row(6, 0)],
    "multi_nli": [
        {"premise": "the cat sat", "hypothesis": "a cat sat", "label": np.int64(0)},
        {"premise": "the dog ran", "hypothesis": "the dog slept", "label": np.int64(2)},
    ],
    "snli": [
        {"premise": "a man walks", "hypothesis": "a person walks", "label": np.int64(0)},
        {"premise": "a man walks", "hypothesis": "nobody agrees", "label": np.int64(-1)},
        {"premise": "a man walks", "hypothesis": "a man is tall", "label": np.int64(1)},
    ],
    "sci_tail": [
        {"premise": "water boils", "hypothesis": "water gets hot", "label": np.int64(0)},
        {"premise": "water boils", "hypothesis": "ice is cold", "label": np.int64(1)},
    ],
    "paws_wiki": [
        {"sentence1": "bob met ann", "sentence2": "ann met bob", "label": np.int64(1)},
        {
            "sentence1": "the cat chased the dog",
            "sentence2": "the dog chased the cat",
            "label": np.int64(0),
        },
    ],
}


def _as_dataset(self, split, *args, **kwargs):
    del split, args, kwargs
    rows = ROWS[self.name]
    first = rows[0]
    if self.name in ("xnli", "xtreme_xnli"):
        signature = {
            "premise": {lang: tf.TensorSpec((), tf.string) for lang in LANGS},
            "hypothesis": {
                "language": tf.TensorSpec((None,), tf.string),
                "translation": tf.TensorSpec((None,), tf.string),
            },
            "label": tf.TensorSpec((), tf.int64),
        }
    else:
        signature = {k: tf.TensorSpec((), tf.int64 if k == "label" else tf.string) for k in first}
    return tf.data.Dataset.from_generator(lambda: iter(rows), output_signature=signature)


@pytest.fixture(autouse=True)
def _env(task_vocab_file, monkeypatch):
    monkeypatch.setenv("SEAHORSE_VOCAB", task_vocab_file)
    with tfds.testing.mock_data(as_dataset_fn=_as_dataset):
        yield


def _examples(task_name: str, split: str) -> list[dict]:
    task = seqio.get_mixture_or_task(task_name)
    ds = task.get_dataset(LENGTHS, split=split, shuffle=False)
    vocabulary = vocab.get_vocabulary()
    out = []
    for ex in ds.as_numpy_iterator():
        out.append(
            {
                "text": ex["inputs_pretokenized"].decode(),
                "decoded": vocabulary.decode(ex["inputs"].tolist()),
                "target": vocabulary.decode(ex["targets"].tolist()),
                "label": int(ex["label"]),
                "language": ex["language"].decode(),
            }
        )
    return out


def test_xnli_eval_picks_one_language_and_drops_rows_without_it():
    de = _examples("xnli_eval.de", "test")
    # Row 2 has no German hypothesis: dropped.
    assert [e["text"] for e in de] == [
        "premise: de premise 0 hypothesis: de hypothesis 0",
        "premise: de premise 1 hypothesis: de hypothesis 1",
    ]
    assert [e["target"] for e in de] == ["1", "0"]  # entailment -> 1, neutral -> 0
    assert {e["language"] for e in de} == {"de"}
    assert [e["label"] for e in de] == [1, 0]
    for e in de:
        assert e["decoded"] == e["text"]


def test_translate_train_reads_xtreme_xnli_for_train_and_xnli_for_validation():
    train = _examples("xnli_translate_train.sw", "train")
    assert [e["text"] for e in train] == [
        "premise: sw premise 5 hypothesis: sw hypothesis 5",
        "premise: sw premise 6 hypothesis: sw hypothesis 6",
    ]
    assert [e["target"] for e in train] == ["0", "1"]
    validation = _examples("xnli_translate_train.sw", "validation")
    assert [e["text"][:20] for e in validation] == ["premise: sw premise "] * 3
    mixture = seqio.get_mixture_or_task("xnli_translate_train")
    assert sorted(t.name for t in mixture.tasks) == sorted(
        f"xnli_translate_train.{lang}" for lang in LANGS
    )


def test_zeroshot_train_is_mnli():
    train = _examples("xnli_zeroshot_train", "train")
    assert [(e["text"], e["target"]) for e in train] == [
        ("premise: the cat sat hypothesis: a cat sat", "1"),
        ("premise: the dog ran hypothesis: the dog slept", "0"),
    ]


def test_snli_filters_rows_without_gold_label():
    rows = _examples("nli_snli", "train")
    assert [(e["text"], e["label"]) for e in rows] == [
        ("premise: a man walks hypothesis: a person walks", 1),
        ("premise: a man walks hypothesis: a man is tall", 0),
    ]


def test_scitail_entails_and_paws_paraphrase_are_yes():
    assert [e["label"] for e in _examples("nli_scitail", "test")] == [1, 0]
    paws = _examples("nli_paws", "validation")
    assert [(e["text"], e["label"]) for e in paws] == [
        ("premise: bob met ann hypothesis: ann met bob", 1),
        ("premise: the cat chased the dog hypothesis: the dog chased the cat", 0),
    ]


def test_local_vitaminc_release(tmp_path, monkeypatch):
    # Not a TFDS dataset: read from a local release folder in VitaminC's field names.
    rows = [
        {"claim": "sales rose", "evidence": "sales rose by 5%", "label": "SUPPORTS"},
        {"claim": "sales fell", "evidence": "sales rose by 5%", "label": "REFUTES"},
        {"claim": "x", "evidence": "y", "label": 7},
    ]
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("SEAHORSE_VITAMINC_DIR", str(tmp_path))
    out = _examples("nli_vitaminc", "validation")
    assert [(e["text"], e["target"]) for e in out] == [
        ("premise: sales rose by 5% hypothesis: sales rose", "1"),
        ("premise: sales rose by 5% hypothesis: sales fell", "0"),
    ]


def test_nli_mixture_rates_follow_training_sizes():
    mixture = seqio.get_mixture_or_task("nli_mixture")
    rates = {t.name: mixture.get_rate(t) for t in mixture.tasks}
    assert rates == {name: float(rate) for name, rate in nli.NLI_MIXTURE_RATES.items()}
