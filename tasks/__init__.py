"""SeqIO task and mixture registrations, imported as `seahorse_t5x.tasks`.

Importing this module registers every task; the names are listed in docs/tasks.md.
"""
