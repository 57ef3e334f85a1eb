"""The command line's argument parser: argparse, with every usage error in one line."""

from __future__ import annotations

import argparse
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (what was wrong, and where help is), as ruff gives them."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
