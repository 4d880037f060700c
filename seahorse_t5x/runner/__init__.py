"""The local runner: mesh and partitioning, packed SeqIO input, the train loop, orbax
checkpoints, evaluation on the score tasks, and the one-command demo."""
