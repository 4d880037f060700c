"""SeqIO task and mixture registrations, imported as `seahorse_t5x.tasks`.

Importing this module registers every task of the project; the names are listed in
docs/tasks.md. Import it only under this name: registering a task twice (e.g. also as
`tasks.seahorse`) raises. A user's own rating data is registered by calling
`register_rating_tasks` (docs/tasks.md, "Your own rating data"), a teacher metric's scores
by calling `register_distillation_tasks` (docs/distillation.md), error analyses in
MetricInstruct's format by calling `register_explanation_tasks` (docs/explanations.md).
"""

from seahorse_t5x.tasks import (  # noqa: F401
    benchmarks,
    distillation,
    explanations,
    ice,
    nli,
    ratings,
    seahorse,
)
from seahorse_t5x.tasks.distillation import (
    register_distillation_tasks,
    remove_distillation_tasks,
)
from seahorse_t5x.tasks.explanations import (
    register_explanation_tasks,
    remove_explanation_tasks,
)
from seahorse_t5x.tasks.ratings import register_rating_tasks, remove_rating_tasks

__all__ = [
    "register_distillation_tasks",
    "register_explanation_tasks",
    "register_rating_tasks",
    "remove_distillation_tasks",
    "remove_explanation_tasks",
    "remove_rating_tasks",
]
