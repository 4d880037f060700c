"""SeqIO metric functions: kinds inferred from parameter names, numbers equal `stats`."""

import inspect
import math

import numpy as np
import pytest
import seqio
import tensorflow as tf

from seahorse_t5x.evaluation import seqio_metrics, stats

LABELS = [1, 0, 1, 1, 0, 0, 1, 0, 1, 0]
SCORES = np.array([-0.1, -2.0, -0.5, -1.5, -0.3, -3.0, -0.2, -1.0, -0.05, -2.5])


def test_parameter_names_are_what_seqio_reads():
    assert list(inspect.signature(seqio_metrics.score_metrics).parameters) == ["targets", "scores"]
    assert list(inspect.signature(seqio_metrics.predict_metrics).parameters) == [
        "targets",
        "predictions",
    ]


@pytest.mark.parametrize(
    "targets",
    [
        LABELS,
        [str(t) for t in LABELS],
        [str(t).encode() for t in LABELS],
        [{"label": t} for t in LABELS],
    ],
)
def test_score_metrics_equal_stats_for_every_target_form(targets):
    # Scores are log P(yes): the metrics are those of P(yes) = exp(score).
    expected = stats.binary_metrics(LABELS, np.exp(SCORES))
    assert expected["pearson"] != pytest.approx(stats.binary_metrics(LABELS, SCORES)["pearson"])
    got = seqio_metrics.score_metrics(targets, list(SCORES))
    assert got == {
        "pearson": expected["pearson"],
        "roc_auc": expected["roc_auc"],
        "positive_rate": 0.5,
        "n": 10.0,
    }


def test_degenerate_score_metrics_are_nan_and_logged(caplog):
    got = seqio_metrics.score_metrics([1, 1, 1], [-0.1, -0.2, -0.3])
    assert math.isnan(got["pearson"]) and math.isnan(got["roc_auc"])
    assert got["positive_rate"] == 1.0
    assert "labels hold one class only" in caplog.text


def test_unreadable_target_is_an_error():
    with pytest.raises(ValueError, match="'yes' is not a label"):
        seqio_metrics.score_metrics(["yes"], [0.0])


def test_predict_metrics_count_invalid_answers():
    targets = ["1", "0", "1", "0", "1", "0"]
    predictions = ["1", "0", "0", "0", "maybe", "1"]
    got = seqio_metrics.predict_metrics(targets, predictions)
    assert got["n"] == 6.0
    assert got["invalid_predictions"] == 1.0
    assert got["accuracy"] == pytest.approx(3 / 6)  # the invalid answer counts as wrong
    valid = stats.binary_metrics([1, 0, 1, 0, 0], [1, 0, 0, 0, 1])
    assert got["pearson"] == pytest.approx(valid["pearson"])
    assert got["roc_auc"] == pytest.approx(valid["roc_auc"])


def _register_fixed_task(name: str) -> None:
    def dataset_fn(split, shuffle_files, seed=None):
        del split, shuffle_files, seed
        n = len(LABELS)
        return tf.data.Dataset.from_tensor_slices(
            {"inputs": [[3, 4, 5]] * n, "targets": [[6]] * n, "label": LABELS}
        )

    def postprocess(output, example=None, is_target=False):
        # As the SEAHORSE tasks do: the gold label travels in the example's features.
        return int(example["label"]) if is_target else output

    vocab = seqio.PassThroughVocabulary(size=10)
    if name in seqio.TaskRegistry.names():
        seqio.TaskRegistry.remove(name)
    seqio.TaskRegistry.add(
        name,
        source=seqio.FunctionDataSource(dataset_fn, splits=["validation"]),
        preprocessors=[],
        output_features={
            "inputs": seqio.Feature(vocab, add_eos=False),
            "targets": seqio.Feature(vocab, add_eos=False),
        },
        postprocess_fn=postprocess,
        metric_fns=[seqio_metrics.score_metrics],
    )


def test_seqio_evaluator_in_score_mode_reports_stats_numbers():
    name = "seahorse_test_score_metrics"
    _register_fixed_task(name)
    evaluator = seqio.Evaluator(
        name,
        feature_converter=seqio.EncDecFeatureConverter(pack=False),
        eval_split="validation",
    )

    def score_fn(dataset):
        # A fake model: the fixed score of each example, returned shuffled to check that
        # SeqIO restores dataset order by index.
        pairs = [(int(i), float(SCORES[int(i)])) for i, _ in dataset.as_numpy_iterator()]
        return pairs[::-1]

    metrics_future, _ = evaluator.evaluate(compute_metrics=True, score_fn=score_fn)
    got = metrics_future.result()[name]
    expected = stats.binary_metrics(LABELS, np.exp(SCORES))
    assert got["pearson"] == pytest.approx(expected["pearson"], abs=1e-12)
    assert got["roc_auc"] == pytest.approx(expected["roc_auc"], abs=1e-12)
    assert got["n"] == 10.0
    seqio.TaskRegistry.remove(name)
