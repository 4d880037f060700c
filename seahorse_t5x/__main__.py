"""`python -m seahorse_t5x` runs the `seahorse-t5x` command."""

import sys

from seahorse_t5x import cli

if __name__ == "__main__":
    sys.exit(cli.main())
