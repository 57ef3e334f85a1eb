"""The tool's exceptions: those that end a run with exit code 2 (bad input, bad rule packs), and those a node, a
store or a codec raises for one unreadable part, which become findings while the rest is still judged."""


class SpecValidateError(Exception):
    """Base class; the message is one line a user can act on."""


class InputError(SpecValidateError):
    """The input cannot be opened or is not a store this tool reads."""


class PackError(SpecValidateError):
    """A rule pack is invalid: the message names the file, the rule id and the field."""


class NodeError(Exception):
    """A node, a stored key or a chunk could not be read; the message names the path and the reason."""


class NotDecoded(NodeError):
    """An array whose data is deliberately not decoded (a codec off the allow-list, pickle above all): the
    clauses about its values are not checked, which the report says, rather than in error."""
