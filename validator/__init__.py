"""spec-validate: clause-by-clause conformance checks for scientific array stores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from validator.engine.model import Pack
from validator.engine.rule_selection import Selection
from validator.report.model import ClauseResult, Finding, Level, Report, Status

__version__ = "0.1.0"
__all__ = ["ClauseResult", "Finding", "Level", "Report", "Selection", "Status", "__version__", "validate"]


def validate(
    path: str | Path,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    packs: Sequence[Pack] | None = None,
    extra_packs: Sequence[str | Path] = (),
) -> Report:
    """Validate one store against every rule pack that applies to it.

    Args:
        path: an HDF5 file or a Zarr store (directory or zip).
        select, ignore, extend_select: rule ids or dotted prefixes (`anndata.csr_matrix`).
        packs: the packs to use instead of the built-in ones.
        extra_packs: paths of further YAML packs to load and use as well.

    Returns:
        The Report: one ClauseResult per selected rule of each pack that applies.

    Raises:
        InputError: the store cannot be opened. PackError: a pack is invalid.
    """
    from validator.engine.loader import builtin_packs, load_pack
    from validator.engine.run import find_scopes, iter_results
    from validator.nodes.detect import open_store
    from validator.report.model import PackInfo, Problem

    chosen = list(builtin_packs() if packs is None else packs) + [load_pack(p) for p in extra_packs]
    selection = Selection(tuple(select), tuple(extend_select), tuple(ignore))
    with open_store(str(path)) as tree:
        results = tuple(iter_results(tree, chosen, selection))
        infos = []
        for pack in chosen:
            scopes = find_scopes(tree, pack)
            if scopes:
                infos.append(PackInfo(pack.name, pack.title, pack.version, tuple(s.root.path for s in scopes)))
        problems = tuple(Problem(p.key, p.message) for p in getattr(tree, "problems", ()))
        return Report(str(path), tree.format, tuple(infos), __version__, results, problems)
