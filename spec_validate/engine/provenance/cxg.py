"""A CELLxGENE CXG's era (its cxg_version and Corpora schema) and its writer, one of the cellxgene converters."""

from __future__ import annotations

import json
from collections.abc import Iterator

from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import Era, WriterMark
from spec_validate.nodes.base import Tree


@detector("cxg", roles={"cellxgene data-portal converter": "cxg", "cellxgene converter": "cxg"})
def cxg(tree: Tree) -> Iterator[Era | WriterMark]:
    if tree.format != "tiledb":
        return
    root = tree.root
    meta = root.child("cxg_group_metadata") if root.kind == "group" else None
    if meta is None:
        if root.kind == "group" and root.child("obs") is not None:
            yield Era(
                "cxg",
                "/",
                "cxg-unnamed",
                "CXG unnamed development version (no cxg_group_metadata)",
                ("no cxg_group_metadata array, which the CXG version history says marks that version",),
            )
        return
    version = meta.attrs.get("cxg_version")
    corpora = meta.attrs.get("corpora")
    schema = None
    try:
        parsed = json.loads(corpora) if isinstance(corpora, str) else None
        if isinstance(parsed, dict):
            schema = parsed.get("schema_version") or (parsed.get("version") or {}).get("corpora_schema_version")
    except (ValueError, AttributeError):
        schema = None
    label = f"CXG {version}" if isinstance(version, str) else "CXG (no cxg_version)"
    if schema:
        label += f" (Corpora schema {schema})"
    yield Era(
        "cxg",
        "/",
        f"cxg-{version}" if isinstance(version, str) else "cxg",
        label,
        (f"cxg_group_metadata cxg_version {version!r}",),
    )
    if root.child("uns") is not None and root.child("uns").kind == "array":
        yield WriterMark(
            "cellxgene data-portal converter",
            "",
            "cxg",
            "an `uns` array beside the CXG arrays, which only the data-portal converter writes",
        )
    elif version in ("0.1", "0.2.0"):
        yield WriterMark("cellxgene converter", "", "cxg", f"cxg_version {version!r}, which cellxgene's own converter wrote")
