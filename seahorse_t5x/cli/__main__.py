"""`python -m seahorse_t5x.cli` is the same as the `seahorse-t5x` command."""

import sys

from seahorse_t5x.cli import main

sys.exit(main())
