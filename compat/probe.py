"""Open files with one reader, fully, each in a forked child with a time limit and a memory cap.

Runs inside a reader's own venv on any Python from 3.8, so it imports nothing of spec_validate: the standard
library and the reader only. Usage:

    python probe.py READER < cases.json

cases.json is a JSON list of {"case", "path", "format"}. One JSON line per case goes to stdout:
{"case", "outcome", "error", "digest"}, outcome one of opened, refused, crashed, timeout, or wrong-values where
the reader returned values it cannot have read from the file (see UndefinedValues).

The reader is imported once, in this parent, and each case runs in a fork of it: importing anndata costs a second
or two, and a fork per case keeps one file's crash, hang or memory blow-up from touching the next case. Forking is
safe only while the parent has no other threads (a fork copies just the calling thread, so a library's worker
thread would be missing in the child and anything waiting on it would hang): the parent only imports, and
readers whose import starts threads are imported in the child instead (see `_PARENT_IMPORT`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import select
import signal
import sys
import time
import traceback
import warnings

TIME_LIMIT_S = float(os.environ.get("COMPAT_TIME_LIMIT_S", "60"))
MEMORY_CAP = int(os.environ.get("COMPAT_MEMORY_CAP", str(4 * 1024**3)))
ERROR_CHARS = 300


# ---------------------------------------------------------------------------------------------------------------
# Digest: a stable hash of what was read. Every value goes through one canonical form, so that two releases of a
# reader that read the same numbers and strings get the same digest whatever container types they return.


class UndefinedValues(Exception):
    """The reader opened the file and returned values that do not come from it.

    A CSR/CSC matrix whose indptr ends past the end of its data or indices is accepted without a check by some
    releases; its dense form then holds whatever memory lies past the arrays, different from run to run. That is
    a wrong-values outcome of its own, found here rather than by comparing digests (which would not reproduce).
    So is a reading from consolidated metadata that differs from the reading of the stored documents (_read_case).
    """


class Digest:
    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def feed(self, key: str, tag: str, payload: bytes = b"") -> None:
        self._h.update(key.encode("utf-8", "replace") + b"\0" + tag.encode() + b"\0" + payload + b"\1")

    def hexdigest(self) -> str:
        return self._h.hexdigest()[:16]


def _text(x) -> str:
    if x is None:
        return "\0NA"
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if isinstance(x, float) and x != x:
        return "\0NA"
    if any(x is m for m in _missing()):
        return "\0NA"
    return str(x)


_MISSING: tuple = ()


def _missing() -> tuple:
    """pandas' NA and NaT where pandas is installed (looked up once: _text runs for every string element)."""
    global _MISSING
    if not _MISSING:
        try:
            import pandas

            _MISSING = (None, pandas.NA, pandas.NaT)
        except ImportError:
            _MISSING = (None,)
    return _MISSING


def _array(d: Digest, key: str, a, exact: bool) -> None:
    """exact: hash the stored dtype and its bytes (array readers); otherwise numbers as float64 (AnnData readers,
    where releases differ in the containers they return but not in the values)."""
    import numpy as np

    a = np.asarray(a)
    shape = "x".join(str(n) for n in a.shape)
    kind = a.dtype.kind
    if kind in "biuf" and not exact:
        d.feed(key, "num:" + shape, np.ascontiguousarray(a, dtype=np.float64).tobytes())
    elif kind in "biufc":
        native = a.dtype.newbyteorder("=")
        d.feed(key, f"num:{shape}:{kind}{a.dtype.itemsize}", np.ascontiguousarray(a, dtype=native).tobytes())
    elif kind in "mM":
        d.feed(key, f"time:{shape}:{a.dtype.str[1:]}", np.ascontiguousarray(a).view("<i8").tobytes())
    elif kind == "V" and a.dtype.names:
        for name in a.dtype.names:
            _array(d, key + "/" + name, a[name], exact)
    elif kind == "V":
        d.feed(key, "void:" + shape, np.ascontiguousarray(a).tobytes())
    else:  # strings and objects: each element as text, whatever string dtype the release uses
        d.feed(key, "str:" + shape, "\x1f".join(_text(x) for x in a.ravel(order="C").tolist()).encode("utf-8", "replace"))


def _series(d: Digest, key: str, s) -> None:
    dtype = s.dtype
    kind = getattr(dtype, "kind", "O")
    if kind in "biuf" and str(dtype) != "category":
        import numpy as np

        # Nullable integer and boolean columns become float64 with NaN for NA, as plain ones do.
        d.feed(key, f"num:{len(s)}", np.ascontiguousarray(s.to_numpy(dtype="float64", na_value=np.nan)).tobytes())
    else:
        d.feed(key, f"str:{len(s)}", "\x1f".join(_text(x) for x in s.astype(object).tolist()).encode("utf-8", "replace"))


def _frame(d: Digest, key: str, df) -> None:
    d.feed(key + "/index", f"str:{len(df.index)}", "\x1f".join(_text(x) for x in df.index.tolist()).encode())
    for col in sorted(df.columns, key=str):
        _series(d, f"{key}/{col}", df[col])


def _sparse_problem(v) -> str:
    """Why densifying this CSR/CSC matrix would read (or write) outside its arrays, or "" when it would not.

    scipy's toarray trusts indptr and indices: past their ends it reads whatever memory follows (values that
    change from run to run) or crashes. The reader is what handed over such a matrix, so this is its outcome."""
    fmt = getattr(v, "format", "")
    if fmt not in ("csr", "csc"):
        return ""
    major, minor = v.shape if fmt == "csr" else v.shape[::-1]
    indptr, indices = v.indptr, v.indices
    if len(indptr) != major + 1:
        return f"indptr has {len(indptr)} entries, not {major + 1}"
    if len(indptr) and (int(indptr.min()) < 0 or int(indptr[-1]) > min(len(v.data), len(indices))):
        return "indptr points outside the data"
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= minor):
        return "indices fall outside the matrix"
    return ""


def _scalar(d: Digest, key: str, v) -> None:
    import numpy as np

    a = np.asarray(v)
    if a.dtype.kind in "biuf":  # a bool or number, whether Python's or numpy's: releases differ in which they return
        d.feed(key, "scalar", repr(float(a)).encode())
    else:
        d.feed(key, "text", _text(a.item()).encode("utf-8", "replace"))


def canon(d: Digest, key: str, v, exact: bool = False) -> None:
    """Feed any value read by a reader into the digest, recursing into mappings and sequences."""
    import numpy as np

    if v is None:
        d.feed(key, "none")
    elif hasattr(v, "columns") and hasattr(v, "index") and hasattr(v, "iloc"):
        _frame(d, key, v)
    elif isinstance(v, dict) or (hasattr(v, "keys") and hasattr(v, "__getitem__") and not hasattr(v, "dtype")):
        for k in sorted(v.keys(), key=str):
            canon(d, f"{key}/{k}", v[k], exact)
    elif hasattr(v, "toarray") and hasattr(v, "nnz"):  # scipy sparse: compared as the dense matrix it stands for
        problem = _sparse_problem(v)
        if problem:
            raise UndefinedValues(f"{key}: {problem}, so the matrix's values are not all from the file")
        _array(d, key, v.toarray(), exact)
    elif isinstance(v, (list, tuple)):
        d.feed(key, f"seq:{len(v)}")
        for i, x in enumerate(v):
            canon(d, f"{key}/{i}", x, exact)
    elif not isinstance(v, np.ndarray) and hasattr(v, "to_numpy") and hasattr(v, "dtype"):
        # A pandas array (nullable integer, boolean, string, categorical): np.asarray of one gives object or float
        # depending on the pandas release, so it goes the way of a DataFrame column instead.
        import pandas

        _series(d, key, pandas.Series(v))
    elif isinstance(v, (str, bytes, bool, int, float, np.generic)):
        _scalar(d, key, v)
    elif isinstance(v, np.ndarray) or (hasattr(v, "__array__") and not hasattr(v, "layout")):
        _array(d, key, v, exact)
    else:  # e.g. an awkward array: no form shared across releases, so only its presence counts
        d.feed(key, "unsupported:" + type(v).__name__)


# ---------------------------------------------------------------------------------------------------------------
# Readers. Each opens one path fully and returns the digest; any exception is the reader refusing the file.


def _zip_store(zarr, path: str):
    return zarr.storage.ZipStore(path, mode="r")


def _anndata_digest(ad, d: Digest, key: str) -> None:
    canon(d, key + "/X", ad.X)
    for part in ("layers", "obsm", "varm", "obsp", "varp", "uns"):
        # anndata 0.13 lists X among the layers under the key None: X is hashed above, once, for every release.
        canon(d, f"{key}/{part}", {k: v for k, v in getattr(ad, part).items() if k is not None})
    canon(d, key + "/obs", ad.obs)
    canon(d, key + "/var", ad.var)
    if ad.raw is not None:
        canon(d, key + "/raw/X", ad.raw.X)
        canon(d, key + "/raw/var", ad.raw.var)


def open_anndata(path: str, fmt: str) -> str:
    import anndata

    if fmt == "anndata-h5ad":
        ad = anndata.read_h5ad(path, backed=None)
    elif path.endswith(".zip"):
        import zarr

        ad = anndata.read_zarr(_zip_store(zarr, path))
    else:
        ad = anndata.read_zarr(path)
    d = Digest()
    _anndata_digest(ad, d, "")
    return d.hexdigest()


def open_mudata(path: str, fmt: str) -> str:
    import mudata

    md = mudata.read_h5mu(path) if fmt == "mudata-h5mu" else mudata.read_zarr(path)
    d = Digest()
    for name in sorted(md.mod):
        _anndata_digest(md.mod[name], d, "mod/" + name)
    for part in ("obsm", "varm", "obsp", "varp", "uns"):
        canon(d, part, dict(getattr(md, part)))
    canon(d, "obs", md.obs)
    canon(d, "var", md.var)
    return d.hexdigest()


def _walk_zarr(node, d: Digest, key: str) -> None:
    canon(d, key + "/.attrs", json.loads(json.dumps(dict(node.attrs), sort_keys=True, default=str)), exact=True)
    if hasattr(node, "shape") and hasattr(node, "dtype") and not hasattr(node, "groups"):
        values = node[...]
        _check_initialised(node, key)
        _array(d, key, values, exact=True)
        return
    for name, arr in sorted(node.arrays(), key=lambda kv: kv[0]):
        _walk_zarr(arr, d, f"{key}/{name}")
    for name, grp in sorted(node.groups(), key=lambda kv: kv[0]):
        _walk_zarr(grp, d, f"{key}/{name}")


def _check_initialised(arr, key: str) -> None:
    """zarr-python 2 fills the chunks a v2 array lacks with its fill_value, and with fill_value null it leaves
    them as np.empty left them: memory the file never held, different from run to run. (zarr-python 3 uses the
    dtype's default there.) Like an unsafe sparse matrix, that is wrong-values found directly."""
    import zarr

    if not zarr.__version__.startswith("2.") or arr.fill_value is not None or arr.dtype.kind in "OUS":
        return
    if arr.nchunks_initialized < arr.nchunks:
        raise UndefinedValues(f"{key or '/'}: fill_value null and {arr.nchunks - arr.nchunks_initialized} chunks missing, "
                              "so those elements are uninitialised memory")  # fmt: skip


def open_zarr(path: str, fmt: str) -> str:
    import zarr

    if not zarr.__version__.startswith("2."):
        # zarr-python 3 fetches a group's members concurrently and raises whichever failure completes first, so
        # a store with two bad arrays would give a different error from run to run; one at a time, it is the
        # first in listing order, every time.
        zarr.config.set({"async.concurrency": 1})
    root = zarr.open(_zip_store(zarr, path) if path.endswith(".zip") else path, mode="r")
    d = Digest()
    _walk_zarr(root, d, "")
    return d.hexdigest()


def open_zarrs(path: str, fmt: str) -> str:
    import zarr
    import zarrs  # noqa: F401  (the codec pipeline below is looked up by name; the import checks it is there)

    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
        return open_zarr(path, fmt)


def open_h5py(path: str, fmt: str) -> str:
    import h5py

    d = Digest()

    def value(key: str, v) -> None:
        if isinstance(v, h5py.Empty):
            d.feed(key, "empty")
        elif isinstance(v, (h5py.Reference, h5py.RegionReference)):
            d.feed(key, "ref")
        elif hasattr(v, "dtype") and v.dtype.kind == "O" and getattr(v, "size", 0) and isinstance(v.flat[0], h5py.Reference):
            d.feed(key, f"refs:{v.size}")
        else:
            canon(d, key, v, exact=True)

    def visit(name: str, obj) -> None:
        for attr in sorted(obj.attrs):
            value(f"{name}@{attr}", obj.attrs[attr])
        if isinstance(obj, h5py.Dataset):
            value(name, obj[()])

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)  # visits in name order, so the digest does not depend on creation order
    return d.hexdigest()


def _documents(path: str):
    """(array folder, zarr_format) of every Zarr array under path, found from the metadata documents."""
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        if ".zarray" in files:
            yield folder, 2
        elif "zarr.json" in files:
            try:
                with open(os.path.join(folder, "zarr.json")) as fh:
                    node_type = json.load(fh).get("node_type")
            except (ValueError, AttributeError):
                node_type = "array"  # unreadable here: let tensorstore open it and say what it makes of it
            if node_type == "array":
                yield folder, 3


def open_tensorstore(path: str, fmt: str) -> str:
    import tensorstore as ts

    if path.endswith(".zip"):
        raise NotImplementedError("zipped stores are not measured with tensorstore")
    d = Digest()
    for folder, zarr_format in sorted(_documents(path)):
        spec = {"driver": "zarr" if zarr_format == 2 else "zarr3", "kvstore": {"driver": "file", "path": folder}}
        arr = ts.open(spec, read=True).result()
        _array(d, os.path.relpath(folder, path), arr.read().result(), exact=True)
    return d.hexdigest()


def open_ome_zarr_py(path: str, fmt: str) -> str:
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader

    location = parse_url(path, mode="r")
    if location is None:
        raise ValueError("ome_zarr.io.parse_url found no Zarr store at the case")
    d = Digest()
    nodes = list(Reader(location)())
    if not nodes:  # nothing the user could display: the reader did not open the image, whatever it raised
        raise LookupError("ome_zarr.reader.Reader found no node to read")
    for i, node in enumerate(nodes):
        canon(d, f"node{i}/metadata", json.loads(json.dumps(node.metadata, sort_keys=True, default=str)), exact=True)
        for j, data in enumerate(node.data):
            _array(d, f"node{i}/data{j}", data.compute() if hasattr(data, "compute") else data, exact=True)
    return d.hexdigest()


# The ome-zarr-models group models, by the root attribute that names what the group is (first match wins: a
# label image has multiscales too).
_OME_MODELS = (
    ("plate", "HCS"),
    ("well", "Well"),
    ("bioformats2raw.layout", "BioFormats2Raw"),
    ("image-label", "ImageLabel"),
    ("multiscales", "Image"),
    ("labels", "Labels"),
)


def open_ome_zarr_models(path: str, fmt: str) -> str:
    """Validate the root group with the model its metadata names. ome_zarr_models.open_ome_zarr tries every model
    and says only that none fitted; calling the one model that should fit keeps the reason in the matrix."""
    import importlib

    import zarr

    group = zarr.open_group(path, mode="r")
    attrs = dict(group.attrs)
    version = "v05" if fmt == "ome-zarr-0.5" else "v04"
    meta = attrs.get("ome", {}) if version == "v05" else attrs
    name = next((model for key, model in _OME_MODELS if key in meta), None)
    if name is None:
        raise LookupError("no OME-Zarr metadata in the root group's attributes")
    model = getattr(importlib.import_module("ome_zarr_models." + version), name).from_zarr(group)
    d = Digest()
    d.feed("type", f"{version}.{name}")
    canon(d, "attributes", json.loads(model.attributes.model_dump_json()), exact=True)
    return d.hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Consolidated metadata. zarr-python 3 opens a group from its consolidated metadata whenever the store has some
# (`.zmetadata` for Zarr v2, `consolidated_metadata` in the root zarr.json for v3): every reader that opens groups
# through it does (zarr-python 3, zarrs, anndata and mudata on zarr-python 3, ome-zarr-py, ome-zarr-models), while
# zarr-python 2's zarr.open and tensorstore read the stored documents. The consolidated copy is a cache of the
# documents; the documents are the store. So where a reader opened a group from consolidated metadata, the case is
# read a second time with the lookup turned off (`use_consolidated=False` on every group open, the reader's calls
# otherwise the same), and a different reading is wrong-values found here: the reader read a stale cache.


_CONSOLIDATED_DIFFERS = "the consolidated metadata gives other values than the stored documents"


def _zarr3_groups():
    """zarr-python 3's AsyncGroup, through which every group is opened; None where zarr is absent or 2.x."""
    try:
        import zarr
    except ImportError:
        return None
    if zarr.__version__.startswith("2."):
        return None
    from zarr.core.group import AsyncGroup

    return AsyncGroup


def _read_case(reader: str, case: dict) -> str:
    opener = OPENERS[reader]
    groups = _zarr3_groups()
    if groups is None:  # h5py, tensorstore, and the readers on zarr-python 2: no consolidated metadata read
        return opener(case["path"], case["format"])
    original = groups.open.__func__
    consolidated = []

    async def watched(cls, *args, **kwargs):
        group = await original(cls, *args, **kwargs)
        if group.metadata.consolidated_metadata is not None:
            consolidated.append(group)
        return group

    async def documents_only(cls, store, zarr_format=3, use_consolidated=None):
        return await original(cls, store, zarr_format=zarr_format, use_consolidated=False)

    groups.open = classmethod(watched)
    try:
        digest = opener(case["path"], case["format"])
    finally:
        groups.open = classmethod(original)
    if not consolidated:  # no consolidated metadata read: one reading, as for any other store
        return digest
    groups.open = classmethod(documents_only)
    try:
        stored = opener(case["path"], case["format"])
    except BaseException as exc:  # noqa: BLE001  (the stored documents do not read as the consolidated copy did)
        message = f"{_CONSOLIDATED_DIFFERS}: read without it, {clean_error(exc, case['path'], case['case'])}"
        raise UndefinedValues(message[:ERROR_CHARS]) from None
    finally:
        groups.open = classmethod(original)
    if stored != digest:
        raise UndefinedValues(f"{_CONSOLIDATED_DIFFERS} (read without it, use_consolidated=False, the values differ)")
    return digest


OPENERS = {
    "anndata": open_anndata,
    "zarr-python": open_zarr,
    "h5py": open_h5py,
    "tensorstore": open_tensorstore,
    "zarrs": open_zarrs,
    "mudata": open_mudata,
    "ome-zarr-py": open_ome_zarr_py,
    "ome-zarr-models": open_ome_zarr_models,
}

# What the parent imports before forking: everything whose import starts no thread (checked by counting
# /proc/self/task after the import: numpy's OpenBLAS pool is the only one, and OpenBLAS re-creates it after a fork).
# Importing ome_zarr starts a thread (through dask), so ome-zarr-py is imported in each child instead.
_PARENT_IMPORT = {
    "anndata": ("anndata", "zarr", "h5py", "numpy", "pandas"),
    "zarr-python": ("zarr", "numpy"),
    "h5py": ("h5py", "numpy"),
    "tensorstore": ("tensorstore", "numpy"),
    "zarrs": ("zarr", "zarrs", "numpy"),
    "mudata": ("mudata", "anndata", "zarr", "h5py", "numpy", "pandas"),
    "ome-zarr-py": ("numpy",),
    "ome-zarr-models": ("ome_zarr_models.v04", "ome_zarr_models.v05", "zarr", "numpy"),
}


# ---------------------------------------------------------------------------------------------------------------
# One case in a child process.


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_HDF5_TIME = re.compile(r"time = [^,]*,")


def _first_line(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors) and getattr(exc, "title", None):  # pydantic: the first line is only "1 validation error for X"
        try:
            first = errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return f"{type(exc).__name__}: {exc.title}: {where}: {first['msg']}"
        except (TypeError, IndexError, KeyError):
            pass
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def clean_error(exc: BaseException, path: str, case: str) -> str:
    """ExceptionType: first line of the message, with what changes from run to run or machine to machine taken out."""
    message = _first_line(exc)
    # anndata wraps what went wrong in "Above error raised while reading key ..." and keeps the cause as
    # __cause__ (or, in 0.7, __context__): the innermost cause says why, the wrapper says where; the matrix wants both.
    inner = exc
    seen = {id(exc)}
    while True:  # the explicit cause (raise ... from), else the exception being handled when this one was raised
        nxt = inner.__cause__ or (None if inner.__suppress_context__ else inner.__context__)
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        inner = nxt
    if inner is not exc:
        message = f"{message} (cause: {_first_line(inner)})"
    # The case's path, then any venv or interpreter path, so the matrix is the same on every machine.
    for p in sorted({path, os.path.realpath(path), os.path.abspath(path)}, key=len, reverse=True):
        message = message.replace(p, case)
    for prefix in sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.abspath(__file__))}, key=len, reverse=True):
        message = message.replace(prefix, "<env>")
    message = _ADDRESS.sub("0x…", message)
    message = _HDF5_TIME.sub("time = …,", message)  # HDF5's file errors say when they happened
    # tensorstore appends the whole JSON spec it was opened with: long, and nothing the message needs.
    message = message.split(" [tensorstore_spec=", 1)[0]
    return message[:ERROR_CHARS]


def _child(reader: str, case: dict, wfd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # libraries that print (or HDF5's error stack) must not mix into the JSON lines
    os.dup2(devnull, 2)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    warnings.simplefilter("ignore")
    try:
        result = {"outcome": "opened", "error": None, "digest": _read_case(reader, case)}
    except UndefinedValues as exc:
        result = {"outcome": "wrong-values", "error": str(exc), "digest": None}
    except BaseException as exc:  # noqa: BLE001  (whatever the reader raises is its refusal, the measurement itself)
        result = {"outcome": "refused", "error": clean_error(exc, case["path"], case["case"]), "digest": None}
        if os.environ.get("COMPAT_TRACEBACK"):
            result["traceback"] = traceback.format_exc()
    with os.fdopen(wfd, "w") as out:
        json.dump(result, out)


def run_case(reader: str, case: dict) -> dict:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            _child(reader, case, wfd)
        except BaseException:  # noqa: BLE001  (the child must never return into the parent's loop)
            code = 3
        os._exit(code)
    os.close(wfd)
    chunks = []
    deadline = time.monotonic() + TIME_LIMIT_S
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([rfd], [], [], left)
        if ready:
            chunk = os.read(rfd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"outcome": "timeout", "error": f"no result within {TIME_LIMIT_S:.0f} s", "digest": None}
    if os.WIFSIGNALED(status):
        return {"outcome": "crashed", "error": f"killed by {signal.Signals(os.WTERMSIG(status)).name}", "digest": None}
    try:
        return json.loads(b"".join(chunks).decode())
    except ValueError:
        return {"outcome": "crashed", "error": f"exited with status {os.WEXITSTATUS(status)} and no result", "digest": None}


def main() -> int:
    reader = sys.argv[1]
    cases = json.load(sys.stdin)
    warnings.simplefilter("ignore")
    for module in _PARENT_IMPORT[reader]:
        __import__(module)
    for case in cases:
        result = run_case(reader, case)
        result["case"] = case["case"]
        print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
