"""The command line parser every ``taigym`` command uses: argparse's, refusing an option in
one line.

argparse answers a bad option with its usage lines and then the error; every other refusal
of the ``taigym`` command is one ``error: ...`` line on stderr with status 2 (scripts/cli.py),
so options are refused the same way, with a pointer to ``--help`` instead of the usage.
"""

from __future__ import annotations

import argparse
import sys


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):
        sys.stderr.write(f"error: {self.prog}: {message} (see {self.prog} --help)\n")
        sys.exit(2)
