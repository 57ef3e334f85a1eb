"""Check primitives: small registered functions that rules compose."""

from validator.checks.registry import all_primitives, check, get

__all__ = ["all_primitives", "check", "get"]
