"""An hdmf-zarr (NWB-on-Zarr) store's era (its NWB version and cached namespaces) and its writer, hdmf-zarr."""

from __future__ import annotations

from collections.abc import Iterator

from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import Era, WriterMark
from spec_validate.nodes.base import Tree


@detector("hdmf-zarr", roles={"hdmf-zarr": "hdmf-zarr"})
def hdmf_zarr(tree: Tree) -> Iterator[Era | WriterMark]:
    root = tree.root
    if not tree.format.startswith("zarr") or root.kind != "group":
        return
    attrs = root.attrs
    typed = "namespace" in attrs and ("neurodata_type" in attrs or "data_type" in attrs)
    if ".specloc" not in attrs and not typed and "neurodata_type" not in attrs:
        return
    cache_name = attrs.get(".specloc") if isinstance(attrs.get(".specloc"), str) else "specifications"
    cache = tree.get("/" + cache_name.strip("/"))
    cached = []
    if cache is not None and cache.kind == "group":
        for ns, group in cache.children().items():
            versions = [v for v, g in group.children().items() if g.kind == "group"] if group.kind == "group" else []
            cached.append(f"{ns} {', '.join(versions)}" if versions else ns)
    kind = attrs.get("neurodata_type") or attrs.get("data_type")
    nwb = attrs.get("nwb_version")
    label = f"NWB {nwb}" if isinstance(nwb, str) else f"{attrs.get('namespace', 'HDMF')} {kind or ''}".strip()
    if cached:
        label += f" (cached namespaces: {'; '.join(cached)})"
    yield Era(
        "hdmf-zarr",
        "/",
        f"nwb-{nwb}" if isinstance(nwb, str) else "hdmf",
        label,
        (f"/ is typed {kind!r} in namespace {attrs.get('namespace')!r}",),
    )
    if ".specloc" in attrs:
        yield WriterMark("hdmf-zarr", "", "hdmf-zarr", "/ carries hdmf-zarr's reserved '.specloc' attribute")
