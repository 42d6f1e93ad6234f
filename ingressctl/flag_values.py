"""Parsers of command-line flag values shared by the controller's flags and its subcommands.

Guarantees: each raises `argparse.ArgumentTypeError` naming the value, so argparse reports the flag and
exits 2.
"""

from __future__ import annotations

import argparse


def bool_flag(value: str) -> bool:
    """`true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`, any case)."""
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)")
