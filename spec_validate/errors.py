"""The tool's exceptions: those that end a run with exit code 2 (bad input, bad rule packs), and those a node, a
store or a codec raises for one unreadable part, which become findings while the rest is still judged."""


class SpecValidateError(Exception):
    """Base class; the message is one line a user can act on."""


class InputError(SpecValidateError):
    """The input cannot be opened or is not a store this tool reads."""


class DamagedInput(InputError):
    """The input is there and can be read, but its bytes are not the format its name or its signature says: an
    empty `.h5ad`, an HDF5 file cut short, a `.zarr` directory with no Zarr document. That is a file that fails,
    reported as one (an unreadable record at its root), not a path the tool cannot open."""

    def __init__(self, path: str, reason: str, format: str = "") -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason  # the message without the path: what the report's unreadable record says
        self.format = format  # the container its signature shows ("hdf5"), or "" where its bytes show none


class PackError(SpecValidateError):
    """A rule pack is invalid: the message names the file, the rule id and the field."""


class NodeError(Exception):
    """A node, a stored key or a chunk could not be read; the message names the path and the reason."""


class TooLarge(NodeError):
    """A stored key holding more bytes than its reader takes: refused before a byte of it is read. The message names
    the key, its size and the bound, so a check can report the clause as not checked for that reason."""


class NotDecoded(NodeError):
    """An array whose data is deliberately not decoded (a codec off the allow-list, a pickle calling a class): the
    clauses about its values are not checked, which the report says, rather than in error."""
