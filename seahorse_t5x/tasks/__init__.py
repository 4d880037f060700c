"""SeqIO task and mixture registrations, imported as `seahorse_t5x.tasks`.

Importing this module registers every task; the names are listed in docs/tasks.md. Import it
only under this name: registering a task twice (e.g. also as `tasks.seahorse`) raises.
"""

from seahorse_t5x.tasks import benchmarks, ice, nli, seahorse  # noqa: F401
