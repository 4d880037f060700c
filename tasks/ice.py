"""In-context evaluator (ICE) tasks: K rated demonstrations, then the pair to rate.

An instruction-tuned model (Flan-T5, mT0) is prompted with the SEAHORSE question, K
(article, summary, answer) demonstrations drawn from the training split, and the pair to
rate; its score is P(yes word) against P(no word) at the first decoder step, exactly as
for the learnt metrics (Jain et al. 2023, "Multi-Dimensional Evaluation of Text
Summarization with In-Context Learning").

Registered names (evaluation only: score mode, gold label in `label`):

  ice_q{n}_k{K}_uniform          n = 1..6, K = 2 or 4: demonstrations drawn uniformly
  ice_q{n}_k{K}_stratified       round(K * yes_fraction) Yes and the rest No demonstrations
  ice_q{n}_k{K}_{mode}.{lang}    the same, rating one language (de, en, es, ru, tr, vi)

Input, as text (`inputs_pretokenized`):

  {question} Answer {yes} or {no}. Article: {a1} Summary: {s1} Answer: {yes|no} ...
  Article: {article} Summary: {summary} Answer:

Demonstrations come from `{data_dir}/train.jsonl`, in the rated item's language, never
from the rated item's own article (`gem_id`); each item's draw is seeded by (seed, task,
gem_id, system), so it does not depend on dataset order, sharding or the split read.
Parts are tokenized separately and fitted at the token level, in this order, until the
input fits `sequence_length["inputs"]` with its EOS: the demonstrations' articles are cut
(the longest first, down to equal lengths), then the rated article, then whole
demonstrations are dropped (the last first). The rated summary is never cut unless it
alone cannot fit (`summary_truncated`).

The sampling and fitting are `seahorse_t5x.formats.ice_format`'s. Settings are read when a dataset is
built: gin `seahorse_t5x.formats.ice_format.ice_settings` (`seed`, `yes_fraction`, `answer_words`), and for
the answer words also the environment variable SEAHORSE_ICE_ANSWER_WORDS (e.g. `Ja,Nein`).
The target is the yes word, so T5X's score mode gives log P(yes word); the scorer compares
the two words' first pieces (`seahorse_t5x.formats.vocab.answer_token_ids`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import seqio
import tensorflow as tf

from seahorse_t5x import constants, errors
from seahorse_t5x.evaluation import seqio_metrics
from seahorse_t5x.formats import ice_format, input_format
from seahorse_t5x.formats import task_names as names
from seahorse_t5x.tasks import postprocessors, premise_hypothesis, seahorse

SHOTS: tuple[int, ...] = (2, 4)

_no_autograph = tf.autograph.experimental.do_not_convert


# ----------------------------------------------------------------------------- source

_OUTPUT_SIGNATURE = {
    "instruction": tf.TensorSpec((), tf.string),
    "demo_articles": tf.TensorSpec((None,), tf.string),
    "demo_rests": tf.TensorSpec((None,), tf.string),
    "demo_labels": tf.TensorSpec((None,), tf.int64),
    "demo_gem_ids": tf.TensorSpec((None,), tf.string),
    "query_rest": tf.TensorSpec((), tf.string),
    **premise_hypothesis.SCHEMA_SIGNATURE,
}


def ice_rows(
    split: str, *, question: int, shots: int, mode: str, language: str | None = None
) -> list[dict]:
    """The rated rows of `split` with their demonstrations, as the source yields them.

    Raises:
      UserError: missing split files, or a training pool too small for a draw.
    """
    settings = ice_format.ice_settings()
    words = settings.answer_words
    pools: dict[str, list[dict]] = {}
    for row in seahorse.examples("train", question):
        pools.setdefault(row["language"], []).append(row)
    task = task_name(question, shots, mode)
    out = []
    for row in seahorse.examples(split, question, language):
        seed = ice_format.item_seed(settings.seed, task, row["gem_id"], row["system"])
        rng = np.random.default_rng(seed)
        pool = pools.get(row["language"], [])
        try:
            demos = ice_format.sample_demonstrations(
                pool, shots, mode, rng, settings.yes_fraction, exclude_gem_id=row["gem_id"]
            )
        except errors.UserError as e:
            raise errors.UserError(f"{task}, language {row['language']}: {e}") from None
        out.append(
            {
                "instruction": ice_format.instruction_text(question, words),
                "demo_articles": [d["premise"] for d in demos],
                "demo_rests": [
                    ice_format.demonstration_rest(d["hypothesis"], words[1 - d["label"]])
                    for d in demos
                ],
                "demo_labels": [d["label"] for d in demos],
                "demo_gem_ids": [d["gem_id"] for d in demos],
                "premise": row["premise"],
                "query_rest": ice_format.demonstration_rest(row["hypothesis"], None),
                "hypothesis": row["hypothesis"],
                "label": row["label"],
                "question": question,
                **{k: row[k] for k in constants.SLICE_FIELDS},
            }
        )
    return out


def _utf8_array(texts: list[str]) -> np.ndarray:
    """A [len(texts)] array of UTF-8 bytes (also for no texts, which tf.string needs typed)."""
    return np.array([t.encode("utf-8") for t in texts], dtype=object).reshape(-1)


def ice_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    question: int,
    shots: int,
    mode: str,
    language: str | None = None,
) -> tf.data.Dataset:
    """`ice_rows` as a tf.data.Dataset (file order; the draw ignores SeqIO's seed)."""
    del shuffle_files, seed
    rows = ice_rows(split, question=question, shots=shots, mode=mode, language=language)

    def generate():
        for row in rows:
            yield {
                **row,
                **{k: _utf8_array(row[k]) for k in ("demo_articles", "demo_rests", "demo_gem_ids")},
                "demo_labels": np.array(row["demo_labels"], dtype=np.int64).reshape(-1),
            }

    return tf.data.Dataset.from_generator(generate, output_signature=_OUTPUT_SIGNATURE)


# ----------------------------------------------------------------------------- preprocessors


@seqio.map_over_dataset
@_no_autograph
def yes_word_targets(x: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Adds `targets_pretokenized` = the yes word (T5X score mode gives log P(yes word)).

    {"label": 0, ...} -> {"label": 0, "targets_pretokenized": "Yes", ...}
    """
    return {**x, "targets_pretokenized": tf.constant(ice_format.ice_settings().answer_words[0])}


@seqio.map_over_dataset
@_no_autograph
def tokenize_ice(
    x: Mapping[str, tf.Tensor], output_features: Mapping[str, seqio.Feature]
) -> dict[str, tf.Tensor]:
    """Tokenizes the prompt's parts separately (each starts a word) and the targets.

    Adds `inputs_pretokenized` (the whole prompt, parts joined by spaces) and
    `instruction_tokens`, `demo_article_tokens` and `demo_rest_tokens` (ragged, one row
    per demonstration), `premise_tokens`, `query_rest_tokens`, `targets`.

    {"instruction": "Q? Answer Yes or No.", "demo_articles": ["A1"], "demo_rests":
     ["Summary: S1 Answer: No"], "premise": "A", "query_rest": "Summary: S Answer:", ...} ->
    {..., "inputs_pretokenized": "Q? Answer Yes or No. Article: A1 Summary: S1 Answer: No
     Article: A Summary: S Answer:", "demo_article_tokens": [ids("A1")], ...}
    """
    input_vocab = output_features["inputs"].vocabulary
    target_vocab = output_features["targets"].vocabulary
    demos = tf.strings.join(
        [ice_format.ARTICLE_MARKER, x["demo_articles"], x["demo_rests"]], separator=" "
    )
    query = tf.strings.join(
        [ice_format.ARTICLE_MARKER, x["premise"], x["query_rest"]], separator=" "
    )
    out = {k: v for k, v in x.items() if k not in ("demo_articles", "demo_rests")}
    out["inputs_pretokenized"] = tf.strings.reduce_join(
        tf.concat([[x["instruction"]], demos, [query]], axis=0), separator=" "
    )
    out["instruction_tokens"] = input_vocab.encode_tf(x["instruction"])
    out["demo_article_tokens"] = input_vocab.encode_tf(x["demo_articles"])
    out["demo_rest_tokens"] = input_vocab.encode_tf(x["demo_rests"])
    out["premise_tokens"] = input_vocab.encode_tf(x["premise"])
    out["query_rest_tokens"] = input_vocab.encode_tf(x["query_rest"])
    out["targets"] = target_vocab.encode_tf(x["targets_pretokenized"])
    return out


_PART_FEATURES = (
    "instruction_tokens",
    "demo_article_tokens",
    "demo_rest_tokens",
    "premise_tokens",
    "query_rest_tokens",
)
_COUNT_FEATURES = (
    "demo_article_tokens_dropped",
    "article_tokens_dropped",
    "demonstrations_dropped",
    "summary_truncated",
)


def _split_ragged(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    bounds = np.cumsum(np.concatenate([[0], lengths]))
    return [flat[bounds[i] : bounds[i + 1]] for i in range(len(lengths))]


def fit_ice_inputs(
    dataset: tf.data.Dataset,
    sequence_length: Mapping[str, int] | None,
    output_features: Mapping[str, seqio.Feature],
) -> tf.data.Dataset:
    """Builds `inputs` (without EOS) within `sequence_length["inputs"] - 1` tokens
    (`seahorse_t5x.formats.ice_format.fit_ice_tokens`), and the four count features it reports.

    With inputs length 9 (budget 8), marker ids("Article:") = [m], instruction [1000],
    demonstration article [10, 10, 10] and rest [30], rated article [20, 20], rest [40]:
      inputs [1000, m, 10, 30, m, 20, 20, 40] (m one token), demo_article_tokens_dropped 2
    """
    budget = input_format.sequence_budget(sequence_length)
    if budget is None:
        budget = np.iinfo(np.int32).max
    marker = np.asarray(
        output_features["inputs"].vocabulary.encode(ice_format.ARTICLE_MARKER), np.int32
    )

    def fit(instruction, art_flat, art_lengths, rest_flat, rest_lengths, article, rest):
        tokens, counts = ice_format.fit_ice_tokens(
            instruction.tolist(),
            marker.tolist(),
            [a.tolist() for a in _split_ragged(art_flat, art_lengths)],
            [r.tolist() for r in _split_ragged(rest_flat, rest_lengths)],
            article.tolist(),
            rest.tolist(),
            budget,
        )
        return (np.asarray(tokens, np.int32), *(np.int32(counts[k]) for k in _COUNT_FEATURES))

    @_no_autograph
    def build(x):
        arts, rests = x["demo_article_tokens"], x["demo_rest_tokens"]
        results = tf.numpy_function(
            fit,
            [
                tf.cast(x["instruction_tokens"], tf.int32),
                tf.cast(arts.flat_values, tf.int32),
                arts.row_lengths(),
                tf.cast(rests.flat_values, tf.int32),
                rests.row_lengths(),
                tf.cast(x["premise_tokens"], tf.int32),
                tf.cast(x["query_rest_tokens"], tf.int32),
            ],
            [tf.int32] * 5,
            stateful=False,
        )
        out = {k: v for k, v in x.items() if k not in _PART_FEATURES}
        out["inputs"] = tf.ensure_shape(results[0], [None])
        for name, value in zip(_COUNT_FEATURES, results[1:], strict=True):
            out[name] = tf.ensure_shape(value, [])
        return out

    return dataset.map(build, num_parallel_calls=tf.data.AUTOTUNE)


def ice_preprocessors() -> list:
    """Targets, tokenization, SeqIO's cache placeholder, fitting, EOS."""
    return [
        yes_word_targets,
        tokenize_ice,
        seqio.CacheDatasetPlaceholder(),
        fit_ice_inputs,
        seqio.preprocessors.append_eos_after_trim,
    ]


# ----------------------------------------------------------------------------- registry


def task_name(question: int, shots: int, mode: str, language: str | None = None) -> str:
    """`ice_q4_k2_uniform`, or `ice_q4_k2_uniform.de` for one language."""
    return names.ice_task(question, shots, mode, language)


def task_names() -> list[str]:
    """Every ICE task name this module registers, in registration order."""
    return [
        task_name(question, shots, mode, language)
        for question in constants.QUESTIONS
        for shots in SHOTS
        for mode in ice_format.SAMPLING_MODES
        for language in (None, *constants.LANGUAGES)
    ]


def _register() -> None:
    for question in constants.QUESTIONS:
        for shots in SHOTS:
            for mode in ice_format.SAMPLING_MODES:
                for language in (None, *constants.LANGUAGES):
                    seqio.TaskRegistry.add(
                        task_name(question, shots, mode, language),
                        source=seqio.FunctionDataSource(
                            dataset_fn=functools.partial(
                                ice_dataset,
                                question=question,
                                shots=shots,
                                mode=mode,
                                language=language,
                            ),
                            splits=ice_format.QUERY_SPLITS,
                        ),
                        preprocessors=ice_preprocessors(),
                        output_features=premise_hypothesis.output_features(),
                        postprocess_fn=postprocessors.score_postprocessor,
                        metric_fns=[seqio_metrics.score_metrics],
                    )


_register()
