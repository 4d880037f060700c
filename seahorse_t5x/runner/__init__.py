"""The local runner: packed SeqIO input, the train step and loop, orbax checkpoints,
evaluation on the score tasks, the memory plan of a train step, and the one-command demo."""
