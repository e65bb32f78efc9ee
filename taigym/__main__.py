"""``python -m taigym``: the ``taigym`` command."""

import sys

from taigym.scripts.cli import main

sys.exit(main())
