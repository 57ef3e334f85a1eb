"""Read a numcodecs Pickle chunk (a pickled numpy object array) as data, never executing it.

numcodecs' Pickle codec stores a chunk as `pickle.dumps(np.asarray(chunk, dtype=object), protocol)`. Unpickling
that with `pickle` imports modules and calls whatever the stream names, so it is never done here. Instead the
opcodes (parsed by `pickletools.genops`, which parses arguments and runs nothing) drive a small stack machine
that builds plain data only: None, bools, ints, floats, str, bytes, bytearray, tuples, lists, dicts, sets. A
global (GLOBAL, STACK_GLOBAL) is pushed as a name, never imported; the only names that are "called" (REDUCE,
BUILD) are those numpy's own array pickle uses, interpreted here rather than run:

- `numpy.core.multiarray._reconstruct(numpy.ndarray, ...)` (`numpy._core` since numpy 2): an empty array,
  whose BUILD state (version, shape, dtype, fortran flag, list of elements) gives its shape and elements;
- `numpy.dtype("O8", ...)` with its BUILD state: the element dtype, which must be object;
- `_codecs.encode(text, "latin1")`: how protocols 0-2 write bytes;
- `builtins.bytearray(bytes)`, `builtins.set(list)`, `builtins.frozenset(list)`: how protocols 0-3 write those.

Anything else a stream calls or constructs (another global under REDUCE, NEWOBJ, INST, OBJ, persistent ids,
extension codes) raises `NotRebuilt`, which names it: the chunk is not damaged, only not read by a tool that runs
nothing from a file. A stream that is no pickle, is cut short, has bytes after STOP, or passes a bound (memo
entries, nesting depth, items, an int's size) raises `Malformed`. Each is one line.
"""

from __future__ import annotations

import math
import pickletools
from collections.abc import Callable
from typing import Any

import numpy as np

# numpy's array pickle names these; they are interpreted here (see the module docstring), never imported.
RECONSTRUCT_MODULES = frozenset({"numpy.core.multiarray", "numpy._core.multiarray"})
OBJECT_DTYPES = frozenset({"O", "O4", "O8", "|O"})
# Built-in types protocols 0-3 write as calls (`__builtin__` is Python 2's name, which protocols 0-2 write).
BUILTINS = frozenset({"builtins", "__builtin__"})
_BUILTIN_TYPES = frozenset({"bytearray", "set", "frozenset"})
LATIN1 = frozenset({"latin1", "latin-1", "iso-8859-1", "iso8859-1"})
# Bounds. A chunk's pickle is at most MAX_VARIABLE_BYTES (decode.py); these stop a small stream from making a large
# or deep structure through shared memo entries, and keep every value one a report can print.
MAX_MEMO = 2**20  # memo entries
MAX_DEPTH = 100  # nesting of containers (and of MARKs), below Python's recursion limit for whoever walks the values
MAX_ITEMS = 2**22  # values visited when walking the result, each shared one counted each time it is reached
MAX_INT_BITS = 8192  # an int of at most 2467 digits: printable (Python refuses str() of ints past 4300 digits)

# Opcodes that push a value they carry as their argument, as it is.
_LITERALS = frozenset(
    {
        "INT",
        "BININT",
        "BININT1",
        "BININT2",
        "LONG",
        "LONG1",
        "LONG4",
        "FLOAT",
        "BINFLOAT",
        "UNICODE",
        "BINUNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE8",
        "BINBYTES",
        "SHORT_BINBYTES",
        "BINBYTES8",
    }
)
# Python 2 str opcodes: unpickled as ASCII text (pickle.loads' default encoding, which numcodecs uses).
_PY2_STRINGS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING"})
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}


class PickleProblem(ValueError):
    """A pickled chunk that is not read; the message is one line, without the chunk's name."""


class Malformed(PickleProblem):
    """Not a pickle, cut short, bytes after its end, a structure that cannot be unpickled, or past a bound."""


class NotRebuilt(PickleProblem):
    """A well-formed pickle that calls or constructs something other than numpy's object-array pickle."""

    def __init__(self, message: str, calls: str | None = None) -> None:
        super().__init__(message)
        self.calls = calls  # the global it calls ("hdmf_zarr.utils.ZarrReference"), where it names one


class Global:
    """A global as the stream names it (module, name): never imported."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


class _Array:
    """numpy's empty array from `_reconstruct`, until BUILD gives it a shape and elements."""

    __slots__ = ("elements", "shape")

    def __init__(self) -> None:
        self.shape: tuple[int, ...] | None = None
        self.elements: list[Any] | None = None


class _DType:
    """`numpy.dtype(spec, ...)`, until BUILD gives it its state (which says nothing the spec does not)."""

    __slots__ = ("spec",)

    def __init__(self, spec: str) -> None:
        self.spec = spec


def object_array(data: bytes) -> tuple[list[Any], tuple[int, ...]]:
    """The elements (in the order stored) and the shape of the numpy object array `data` pickles.

    Raises Malformed or NotRebuilt (see the module docstring); nothing the stream names is imported or called.
    """
    try:
        result, end = _Machine().run(data)
    except PickleProblem:
        raise
    except (ValueError, TypeError, IndexError, KeyError, OverflowError, RecursionError) as exc:
        # genops' own complaints (unknown opcode, truncated argument, text that does not parse), in one line.
        raise Malformed(f"is not a readable pickle ({type(exc).__name__}: {_line(exc)})") from None
    if end != len(data):
        raise Malformed(f"has {len(data) - end} bytes after its pickle's STOP")
    if not isinstance(result, _Array):
        raise Malformed(f"pickles {_kind(result)}, not a numpy array")
    if result.elements is None or result.shape is None:
        raise Malformed("pickles a numpy array that is never given its contents (no BUILD)")
    _walk(result.elements)
    return result.elements, result.shape


class _Machine:
    """The stack machine: the opcodes of one pickle, each handled by a method named in _HANDLERS."""

    def __init__(self) -> None:
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []  # the stacks below each open MARK, as pickle keeps them
        self.memo: dict[int, Any] = {}

    def run(self, data: bytes) -> tuple[Any, int]:
        """The value STOP leaves, and the offset just past STOP."""
        for op, arg, pos in pickletools.genops(data):
            name = op.name
            if name == "STOP":
                if self.metastack or len(self.stack) != 1:
                    raise Malformed("ends (STOP) with an unfinished stack")
                return self.stack[0], pos + 1
            handler = _HANDLERS.get(name)
            if handler is None:  # NEXT_BUFFER, READONLY_BUFFER (out-of-band buffers numcodecs never passes), ...
                raise Malformed(f"uses opcode {name}, which pickle.loads of a chunk cannot use")
            handler(self, name, arg)
        raise Malformed("ends before its STOP")  # genops raises first; kept so the machine never falls off the end

    # -- the stack
    def push(self, value: Any) -> None:
        self.stack.append(value)

    def pop(self) -> Any:
        if not self.stack:
            raise Malformed("pops an empty stack")
        return self.stack.pop()

    def top(self) -> Any:
        if not self.stack:
            raise Malformed("reads the top of an empty stack")
        return self.stack[-1]

    def pop_mark(self) -> list[Any]:
        """The values above the last MARK; the stack below it is the stack again."""
        if not self.metastack:
            raise Malformed("pops to a MARK that was never set")
        items, self.stack = self.stack, self.metastack.pop()
        return items

    # -- handlers: (machine, opcode name, argument)
    def literal(self, name: str, arg: Any) -> None:
        self.push(_checked_int(arg) if isinstance(arg, int) else arg)

    def constant(self, name: str, arg: Any) -> None:
        self.push(_CONSTANTS[name])

    def py2_string(self, name: str, arg: Any) -> None:
        self.push(_ascii(arg))

    def bytearray8(self, name: str, arg: Any) -> None:
        self.push(bytearray(arg))

    def proto(self, name: str, arg: Any) -> None:
        if name == "PROTO" and not 0 <= arg <= 5:
            raise Malformed(f"declares pickle protocol {arg}, not 0 to 5")

    def mark(self, name: str, arg: Any) -> None:
        if len(self.metastack) >= MAX_DEPTH:
            raise Malformed(f"nests MARKs more than {MAX_DEPTH} deep")
        self.metastack.append(self.stack)
        self.stack = []

    def pop_op(self, name: str, arg: Any) -> None:
        if name == "POP" and self.stack:
            self.stack.pop()
        else:
            self.pop_mark()  # POP_MARK; and as pickle does, POP of an empty stack drops the MARK

    def dup(self, name: str, arg: Any) -> None:
        self.push(self.top())

    def put(self, name: str, arg: Any) -> None:
        if len(self.memo) >= MAX_MEMO:
            raise Malformed(f"stores more than {MAX_MEMO} memo entries")
        self.memo[len(self.memo) if name == "MEMOIZE" else arg] = self.top()

    def get(self, name: str, arg: Any) -> None:
        if arg not in self.memo:
            raise Malformed(f"reads memo entry {arg} ({name}), which was never stored")
        self.push(self.memo[arg])

    def empty(self, name: str, arg: Any) -> None:
        self.push({"EMPTY_LIST": list, "EMPTY_DICT": dict, "EMPTY_TUPLE": tuple, "EMPTY_SET": set}[name]())

    def small_tuple(self, name: str, arg: Any) -> None:
        n = int(name[-1])
        if len(self.stack) < n:
            raise Malformed(f"makes a tuple ({name}) of {len(self.stack)} values on the stack")
        items = self.stack[-n:]
        del self.stack[-n:]
        self.push(tuple(items))

    def from_mark(self, name: str, arg: Any) -> None:
        items = self.pop_mark()  # first: it replaces the stack the result goes on
        if name == "TUPLE":
            self.push(tuple(items))
        elif name == "LIST":
            self.push(items)
        elif name == "FROZENSET":
            self.push(frozenset(_hashable(v, name) for v in items))
        else:  # DICT
            self.push(_pairs({}, items, name))

    def add(self, name: str, arg: Any) -> None:
        if name == "APPEND":
            items = [self.pop()]
        elif name == "SETITEM":
            value = self.pop()
            items = [self.pop(), value]  # key, value
        else:
            items = self.pop_mark()
        if name in ("APPEND", "APPENDS"):
            _target(self.top(), list, name).extend(items)
        elif name in ("SETITEM", "SETITEMS"):
            _pairs(_target(self.top(), dict, name), items, name)
        else:  # ADDITEMS
            _target(self.top(), set, name).update(_hashable(v, name) for v in items)

    def global_op(self, name: str, arg: Any) -> None:
        if name == "GLOBAL":
            module, _, attr = arg.partition(" ")
        else:
            attr, module = self.pop(), self.pop()
            if not isinstance(module, str) or not isinstance(attr, str):
                raise Malformed("names a global (STACK_GLOBAL) by values that are not a module and a name")
        self.push(Global(module, attr))

    def reduce(self, name: str, arg: Any) -> None:
        args, func = self.pop(), self.pop()
        self.push(_reduce(func, args))

    def build(self, name: str, arg: Any) -> None:
        state = self.pop()
        _build(self.top(), state)

    def construct(self, name: str, arg: Any) -> None:
        if name == "INST":
            module, _, attr = arg.partition(" ")
            raise _constructs(Global(module, attr), name)
        if name == "OBJ":
            items = self.pop_mark()
            raise _constructs(items[0] if items else None, name)
        for _ in range(2 if name == "NEWOBJ_EX" else 1):  # kwargs (NEWOBJ_EX), args
            self.pop()
        raise _constructs(self.pop(), name)

    def persistent(self, name: str, arg: Any) -> None:
        if name.startswith("EXT"):
            raise NotRebuilt(f"names extension code {arg} ({name}), which is not looked up")
        raise NotRebuilt(f"names a persistent id ({name}), which only the writer's own unpickler resolves")


_HANDLERS: dict[str, Callable[[_Machine, str, Any], None]] = {
    **dict.fromkeys(_LITERALS, _Machine.literal),
    **dict.fromkeys(_CONSTANTS, _Machine.constant),
    **dict.fromkeys(_PY2_STRINGS, _Machine.py2_string),
    "BYTEARRAY8": _Machine.bytearray8,
    "PROTO": _Machine.proto,
    "FRAME": _Machine.proto,
    "MARK": _Machine.mark,
    "POP": _Machine.pop_op,
    "POP_MARK": _Machine.pop_op,
    "DUP": _Machine.dup,
    **dict.fromkeys(("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"), _Machine.put),
    **dict.fromkeys(("GET", "BINGET", "LONG_BINGET"), _Machine.get),
    **dict.fromkeys(("EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"), _Machine.empty),
    **dict.fromkeys(("TUPLE1", "TUPLE2", "TUPLE3"), _Machine.small_tuple),
    **dict.fromkeys(("TUPLE", "LIST", "FROZENSET", "DICT"), _Machine.from_mark),
    **dict.fromkeys(("APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS"), _Machine.add),
    **dict.fromkeys(("GLOBAL", "STACK_GLOBAL"), _Machine.global_op),
    "REDUCE": _Machine.reduce,
    "BUILD": _Machine.build,
    **dict.fromkeys(("NEWOBJ", "NEWOBJ_EX", "OBJ", "INST"), _Machine.construct),
    **dict.fromkeys(("PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4"), _Machine.persistent),
}


def _reduce(func: Any, args: Any) -> Any:
    """What REDUCE yields for the calls numpy's array pickle makes; NotRebuilt for any other call."""
    if not isinstance(func, Global):
        raise Malformed(f"calls {_kind(func)}, which is not callable")
    if not isinstance(args, tuple):
        raise Malformed(f"calls {func} with {_kind(args)}, not a tuple of arguments")
    if func.module in RECONSTRUCT_MODULES and func.name == "_reconstruct":
        cls = args[0] if args else None
        if isinstance(cls, Global) and (cls.module, cls.name) == ("numpy", "ndarray"):
            return _Array()
        raise _constructs(cls, "REDUCE")
    if (func.module, func.name) == ("numpy", "dtype"):
        if not args or not isinstance(args[0], str):
            raise Malformed(f"calls numpy.dtype with {_kind(args[0] if args else None)}, not a type string")
        return _DType(args[0])
    if (func.module, func.name) == ("_codecs", "encode"):
        if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str) and args[1].lower() in LATIN1:
            try:
                return args[0].encode("latin-1")
            except UnicodeEncodeError:
                raise Malformed("encodes text as latin1 that latin1 cannot hold") from None
        why = "calls _codecs.encode with arguments other than (text, 'latin1'), which is not rebuilt"
        raise NotRebuilt(why, "_codecs.encode")
    if func.module in BUILTINS and func.name in _BUILTIN_TYPES:
        return _builtin(func.name, args)
    raise _constructs(func, "REDUCE")


def _builtin(name: str, args: tuple[Any, ...]) -> Any:
    """bytearray(bytes), set(list) or frozenset(list), as protocols 0-3 write them: made here, nothing called."""
    want = bytes if name == "bytearray" else list
    if len(args) > 1 or (args and type(args[0]) is not want):
        why = f"calls builtins.{name} with arguments other than one {want.__name__}, which is not rebuilt"
        raise NotRebuilt(why, f"builtins.{name}")
    if name == "bytearray":
        return bytearray(args[0] if args else b"")
    items = [_hashable(v, "REDUCE") for v in (args[0] if args else [])]
    return set(items) if name == "set" else frozenset(items)


def _build(target: Any, state: Any) -> None:
    """BUILD (setting an object's state) on the two objects numpy's array pickle builds; Malformed on any other."""
    if isinstance(target, _DType):
        if not isinstance(state, tuple):
            raise Malformed(f"builds numpy.dtype with {_kind(state)}, not a state tuple")
        return
    if not isinstance(target, _Array):
        raise Malformed(f"sets the state of {_kind(target)} (BUILD), which has none")
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise Malformed("builds a numpy array from a state that is not (version, shape, dtype, fortran, data)")
    shape, dtype, fortran, elements = state[-4:]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise Malformed(f"builds a numpy array of shape {_kind(shape)}, not a tuple of sizes")
    if not isinstance(dtype, _DType):
        raise Malformed(f"builds a numpy array whose dtype is {_kind(dtype)}")
    if dtype.spec not in OBJECT_DTYPES:
        raise Malformed(f"pickles an array of dtype {dtype.spec!r}, not of objects")
    if not isinstance(elements, list) or len(elements) != math.prod(shape):
        raise Malformed(f"builds a numpy array of shape {list(shape)} from {_kind(elements)}, not a list of its elements")
    if fortran and sum(n > 1 for n in shape) > 1:
        # numpy lists the elements in C order and lays a Fortran array out in Fortran order; zarr-python flattens
        # a decoded chunk in its memory order (reshape(-1, order="A")), so that is the order given here.
        order = np.arange(len(elements)).reshape(shape).ravel(order="F").tolist()
        elements = [elements[i] for i in order]
    target.shape, target.elements = shape, elements


def _constructs(what: Any, opcode: str) -> NotRebuilt:
    """The problem for a call or construction of `what` (the global, where it is one) that is not rebuilt."""
    if isinstance(what, Global):
        return NotRebuilt(f"calls {what} ({opcode}), which is not rebuilt (nothing from a file is executed)", str(what))
    return NotRebuilt(f"constructs {_kind(what)} ({opcode}), which is not rebuilt (nothing from a file is executed)")


def _target(value: Any, kind: type, opcode: str) -> Any:
    if type(value) is not kind:
        raise Malformed(f"adds items ({opcode}) to {_kind(value)}, not a {kind.__name__}")
    return value


def _pairs(target: dict[Any, Any], items: list[Any], opcode: str) -> dict[Any, Any]:
    if len(items) % 2:
        raise Malformed(f"sets items ({opcode}) from an odd number of keys and values")
    for i in range(0, len(items), 2):
        target[_hashable(items[i], opcode)] = items[i + 1]
    return target


def _hashable(value: Any, opcode: str) -> Any:
    # Only plain values reach a dict or set: hashing one of them runs no code from the stream.
    try:
        hash(value)
    except TypeError:
        raise Malformed(f"uses {_kind(value)} as a key ({opcode}), which cannot be one") from None
    return value


def _checked_int(value: int) -> int:
    if value.bit_length() > MAX_INT_BITS:
        raise Malformed(f"holds an int of {value.bit_length()} bits, more than the {MAX_INT_BITS} read")
    return value


def _ascii(value: Any) -> str:
    """A Python 2 str as pickle.loads reads it by default: ASCII text."""
    raw = value.encode("latin-1") if isinstance(value, str) else bytes(value)
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise Malformed("holds a Python 2 str that is not ASCII, which pickle.loads does not read") from None


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _walk(elements: list[Any]) -> None:
    """Check the result: plain values only (no global, array or dtype left in it), no cycle, within the bounds.

    Iterative, each value counted each time it is reached: memo entries let a small stream share one list
    many times over (a list of 2**40 items by doubling), and whoever reads the elements reaches them that often.
    """
    visits = 0
    stack: list[tuple[Any, int]] = [(elements, 0)]
    path: list[int] = []  # ids of the containers on the way down to the current value, to find cycles
    while stack:
        value, depth = stack.pop()
        del path[depth:]
        visits += 1
        if visits + len(stack) > MAX_ITEMS:  # what is still on the stack will be visited too
            raise Malformed(f"holds more than {MAX_ITEMS} values (counting each shared one each time it is reached)")
        if isinstance(value, Global):
            raise NotRebuilt(f"holds the global {value}, which is not imported (nothing from a file is executed)", str(value))
        if isinstance(value, (_Array, _DType)):
            what = "numpy.ndarray" if isinstance(value, _Array) else "numpy.dtype"
            raise NotRebuilt(f"holds a {what} as an element, which is not rebuilt", what)
        if not isinstance(value, _CONTAINERS):
            continue
        if id(value) in path:
            raise Malformed("holds a container that contains itself")
        if depth >= MAX_DEPTH:
            raise Malformed(f"nests containers more than {MAX_DEPTH} deep")
        path.append(id(value))
        children = [x for kv in value.items() for x in kv] if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


def _kind(value: Any) -> str:
    """A value named for a message: its type, or the global it is."""
    if isinstance(value, Global):
        return f"the global {value}"
    if isinstance(value, _Array):
        return "a numpy array"
    if isinstance(value, _DType):
        return "a numpy dtype"
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."
