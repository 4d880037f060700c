"""The one P(yes) path: model inputs, the sharded inference engine and the `Scorer` API.

`score`, `evaluate`, the trainer's validation and the benchmark scripts all go through it:
- `inputs`: token ids of `premise: ARTICLE hypothesis: SUMMARY` in numpy, cut as
  `seahorse_t5x.formats.input_format` says, exactly as the SeqIO preprocessors cut them;
- `engine`: the label logits at the first decoder step, the length-bucket batch plan, and
  parameters and batches placed on a `data x model` mesh with the runner's logical-axis rules;
- `windows`: long articles split at sentence boundaries into windows beside the whole
  summary, and the per-row aggregate (max or mean) of the windows' P(yes);
- `scorer`: `Scorer`, from a checkpoint or from (config, params);
- `precision`: the dtype of the model's products `--dtype auto` chooses for the platform.
"""
