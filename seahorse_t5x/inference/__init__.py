"""The one P(yes) path: model inputs, the sharded inference engine, the `Scorer` API and the
scoring job.

`score`, `evaluate`, the demo, the trainer's validation and the benchmark scripts all go
through it:
- `inputs`: token ids of `premise: ARTICLE hypothesis: SUMMARY` in numpy, cut as
  `seahorse_t5x.formats.input_format` says, exactly as the SeqIO preprocessors cut them;
- `batching`: the length-bucket batch plan, its ladders and CPU cost model, and packing;
- `placement`: parameters placed on a `data x model` mesh with the runner's logical-axis
  rules, shard by shard, int8 included;
- `engine`: the label logits at the first decoder step over those plans, batches on the mesh;
- `windows`: long articles split at sentence boundaries into windows beside the whole
  summary, and the per-row aggregate (max or mean) of the windows' P(yes);
- `precision`: the dtype of the model's products `dtype="auto"` chooses for the platform;
- `settings`: `ScoringSettings` (one object for every scoring setting) and the folder of
  compiled programs;
- `questions`: what `questions` asks of a family, a multi-question or a one-question model;
- `scorer`: `Scorer`, from a checkpoint or from (config, params), and `score_questions`;
- `loading`: the one way a `Scorer` (`build_scorer`, `load_scorer` from a checkpoint and
  `ScoringSettings`) and an `Engine` (`build_engine`) are built;
- `score_file`: the scoring job over a file (`seahorse-t5x score`), resumable; its parts:
  `input_rows` (reading and checking rows), `resume` (the partial output and its run
  record), `score_job` (the chunk loop), `columns` (per-question columns and their join).
"""
