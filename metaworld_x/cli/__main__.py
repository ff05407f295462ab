"""`python -m metaworld_x.cli`, the same as the `metaworld-x` command."""

import sys

from metaworld_x.cli import main

sys.exit(main())
