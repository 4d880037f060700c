"""Everything that writes score files (`data/scorefiles.py` owns their rows): `evaluate`
(SeqIO score tasks scored by a `Scorer`), `t5x_scores` (T5X inference output joined to its
task's rows), `baselines` (majority and ROUGE-L) and `import_scores` (an external metric's
scores joined to a benchmark's labels). `evaluation/` reads them."""
