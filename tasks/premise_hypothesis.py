"""The one way a premise/hypothesis task is added to SeqIO's registry (registers nothing itself).

Every SEAHORSE, NLI and outside-benchmark task has the same shape: a source in the
intermediate schema of `seahorse_t5x.tasks.preprocessors`, the shared premise/hypothesis chain
(summary-keeping truncation unless gin picks the paper's), and, by mode, the matching
postprocessor and metric:

  score mode      constant target "1", gold label kept in `label`: `score_postprocessor`,
                  `seqio_metrics.score_metrics` (T5X score mode, `evaluate`)
  predict mode    target "1"/"0": `predict_postprocessor`, `seqio_metrics.predict_metrics`
                  (training, decoding)

A benchmark with its own label form passes its own postprocessor and metric.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import seqio
import tensorflow as tf

from seahorse_t5x.evaluation import seqio_metrics
from seahorse_t5x.formats import vocab
from seahorse_t5x.tasks import postprocessors, preprocessors

# The intermediate schema of `seahorse_t5x.tasks.preprocessors`, as a source yields it (tasks add
# their own extra features to it: `question_prompt`, the ICE demonstrations).
SCHEMA_SIGNATURE: dict[str, tf.TensorSpec] = {
    "premise": tf.TensorSpec((), tf.string),
    "hypothesis": tf.TensorSpec((), tf.string),
    "label": tf.TensorSpec((), tf.int64),
    "question": tf.TensorSpec((), tf.int64),
    "gem_id": tf.TensorSpec((), tf.string),
    "language": tf.TensorSpec((), tf.string),
    "dataset": tf.TensorSpec((), tf.string),
    "system": tf.TensorSpec((), tf.string),
}


def output_features(vocabulary: seqio.Vocabulary | None = None) -> dict[str, seqio.Feature]:
    """`inputs` and `targets` over one vocabulary, each ending in EOS.

    Args:
      vocabulary: default `vocab.deferred_vocabulary()`: the path is resolved when a dataset
        is built (gin, `SEAHORSE_VOCAB`, ...), not at registration.
    """
    if vocabulary is None:
        vocabulary = vocab.deferred_vocabulary()
    return {
        "inputs": seqio.Feature(vocabulary=vocabulary, add_eos=True),
        "targets": seqio.Feature(vocabulary=vocabulary, add_eos=True),
    }


def add_premise_hypothesis_task(
    name: str,
    source: seqio.DataSource,
    output_features: Mapping[str, seqio.Feature],
    *,
    score_mode: bool,
    multi_question: bool = False,
    postprocess_fn: Callable[..., object] | None = None,
    metric_fns: Sequence[Callable[..., Mapping[str, float]]] | None = None,
    extra_preprocessors: Sequence[Callable[..., tf.data.Dataset]] = (),
) -> seqio.Task:
    """Registers a task whose source yields premise/hypothesis examples.

    Args:
      name: the task name (`seahorse_t5x.formats.task_names` builds them).
      source: yields the intermediate schema (`premise`, `hypothesis`, `label`, `question`,
        metadata strings; `question_prompt` with `multi_question`).
      output_features: `inputs` and `targets` features (`output_features()`).
      score_mode: T5X score mode (constant target "1") instead of the "1"/"0" target.
      multi_question: name the question at the start of the input.
      postprocess_fn: replaces the mode's postprocessor.
      metric_fns: replace the mode's metric.
      extra_preprocessors: run after the chain (inputs and targets final), e.g. the
        distillation tasks' soft targets.

    Returns:
      The registered task.
    """
    if postprocess_fn is None:
        postprocess_fn = (
            postprocessors.score_postprocessor
            if score_mode
            else postprocessors.predict_postprocessor
        )
    if metric_fns is None:
        metric_fns = [seqio_metrics.score_metrics if score_mode else seqio_metrics.predict_metrics]
    return seqio.TaskRegistry.add(
        name,
        source=source,
        # truncation=None: keep_summary unless gin picks the paper's "right" (docs/tasks.md).
        preprocessors=preprocessors.premise_hypothesis_preprocessors(
            score_mode=score_mode, truncation=None, multi_question=multi_question
        )
        + list(extra_preprocessors),
        output_features=output_features,
        postprocess_fn=postprocess_fn,
        metric_fns=list(metric_fns),
    )
