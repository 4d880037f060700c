"""SeqIO task and mixture registrations, imported as `seahorse_t5x.tasks`.

Importing this module registers every task of the project; the names are listed in
docs/tasks.md. Import it only under this name: registering a task twice (e.g. also as
`tasks.seahorse`) raises. A user's own rating data is registered by calling
`register_rating_tasks` (docs/tasks.md, "Your own rating data").
"""

from seahorse_t5x.tasks import benchmarks, ice, nli, ratings, seahorse  # noqa: F401
from seahorse_t5x.tasks.ratings import register_rating_tasks, remove_rating_tasks

__all__ = ["register_rating_tasks", "remove_rating_tasks"]
