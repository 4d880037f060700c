"""The formats every layer shares, without TensorFlow or JAX: the vocabulary (`vocab`), the
model's input text and its cut (`input_format`), the in-context evaluator's prompt
(`ice_format`) and the SEAHORSE/ICE task-name grammar (`task_names`)."""
