"""Errors that end a run with exit code 2: bad input and bad rule packs."""


class SpecValidateError(Exception):
    """Base class; the message is one line a user can act on."""


class InputError(SpecValidateError):
    """The input cannot be opened or is not a store this tool reads."""


class PackError(SpecValidateError):
    """A rule pack is invalid: the message names the file, the rule id and the field."""
