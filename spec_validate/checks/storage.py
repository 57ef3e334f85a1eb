"""Primitives about how arrays are stored: string types, codecs, chunking."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from spec_validate.checks.api import Options, check
from spec_validate.model import Finding, NotApplicable, Scope
from spec_validate.nodes.base import Node
from spec_validate.nodes.zarr.v3 import element_codec_names


@check(
    options={
        "properties": {
            "length": {"enum": ["variable", "fixed"]},
            "charset": {"enum": ["utf-8", "ascii", "utf-32"]},
            "dtype_kind": {"type": "string", "pattern": "^[OSU]$"},
        },
        "required": ["length"],
    },
    kind="array",
    own_metadata_only=True,
)
def string_storage(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array stores strings of `length` (variable or fixed), in `charset` and numpy kind `dtype_kind` when given."""
    info = node.storage.string if node.storage else None
    wanted = " ".join(x for x in (options["length"] + "-length", options.get("charset")) if x)
    if info is None:
        stored = node.dtype.str if node.dtype is not None else "unknown"
        yield Finding(f"is not stored as strings (dtype {stored}), expected {wanted} strings", details={"stored": stored})
        return
    problems = []
    if info.length != options["length"]:
        problems.append(f"{info.length}-length")
    if options.get("charset") and info.charset != options["charset"]:
        problems.append(f"charset {info.charset or 'unspecified'}")
    if options.get("dtype_kind") and (node.dtype is None or node.dtype.kind != options["dtype_kind"]):
        problems.append(f"numpy kind {node.dtype.kind if node.dtype is not None else '?'}")
    if problems:
        yield Finding(
            f"stores strings as {info.container_dtype} ({', '.join(problems)}), expected {wanted}",
            details={"stored": info.container_dtype, "length": info.length, "charset": info.charset},
        )


@check(options={"properties": {"id": {"type": "string"}}, "required": ["id"]}, kind="array", own_metadata_only=True)
def has_codec(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's codec chain (filters, compressor, or v3 codecs, a shard's inner codecs included) includes the codec `id`.

    In Zarr v3 a sharded array's elements are encoded by the sharding codec's inner codecs (anndata 0.13 shards its
    string arrays: `vlen-utf8` is inside `sharding_indexed`), so those count; a shard's index codecs do not.
    """
    meta = node.metadata if node.storage is not None and node.storage.format == "zarr-v3" else None
    codecs = (
        element_codec_names(meta.get("codecs")) if isinstance(meta, Mapping) else (node.storage.codecs if node.storage else ())
    )
    if options["id"] not in codecs:
        yield Finding(
            f"codecs are {list(codecs) or 'none'}, expected {options['id']!r} among them", details={"codecs": list(codecs)}
        )


@check(kind="group")
def chunks_shared(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every row-aligned array of the group's entries has the same chunk length along axis 0.

    Row-aligned arrays are the array entries and, inside group entries (categoricals, nullables), the
    arrays as long as the group's own length (codes, values, mask), not lookup tables such as categories.
    Contiguous storage counts as one chunk of the whole length. Not applicable when: the length is unknown.
    """
    shape = scope.logical_shape(node)
    if not shape:
        raise NotApplicable(f"the length of {node.path} is unknown")
    seen: dict[str, int] = {}
    for child in node.children().values():
        candidates = [child] if child.kind == "array" else list(child.children().values())
        for array in candidates:
            if array.kind == "array" and array.shape and array.shape[0] == shape[0]:
                seen[array.path] = array.chunks[0] if array.chunks else array.shape[0]
    distinct = sorted(set(seen.values()))
    if len(distinct) > 1:
        example = {v: next(p for p, c in seen.items() if c == v) for v in distinct}
        yield Finding(
            f"entries use {len(distinct)} different chunk lengths: "
            + ", ".join(f"{v} ({p})" for v, p in list(example.items())[:5]),
            details={"chunk_lengths": distinct},
        )
