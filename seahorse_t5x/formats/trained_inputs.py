"""What a checkpoint records about the inputs it was trained on, so that `score` prompts it
as it was trained: the keys the local trainer writes into each step's `meta`, and the file
a T5X run writes them to (`MODEL_DIR/seahorse_meta.json`: T5X's checkpoints carry no meta).

    mixture_or_task_name  the training task or mixture (`seahorse_all`, `distil_all`)
    inputs_as             the task whose inputs it had, where its own name does not say
                          (a distillation set's: `distil_all` -> `seahorse_all`, `tone_all`)
    questions             the questions it answers: SEAHORSE's as numbers, a rating set's
                          as names (`[4]`, `["polite"]`)
    question_prompts      a multi-question model of a rating set's questions: the text
                          its inputs name each question by (`{"polite": "polite"}`)
"""

from __future__ import annotations

META_TASK = "mixture_or_task_name"
META_INPUTS_AS = "inputs_as"
META_QUESTIONS = "questions"
META_QUESTION_PROMPTS = "question_prompts"
# Beside a T5X run's `checkpoint_N` folders, in its MODEL_DIR.
T5X_META_FILE = "seahorse_meta.json"
