"""--select / --extend-select / --ignore: rule ids or dotted prefixes, matched segment by segment."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple


def prefix_matches(prefix: str, rule_id: str) -> bool:
    """`anndata.csr_matrix` matches `anndata.csr_matrix.indptr-monotonic`, not `anndata.csr_matrixx.x`."""
    want, have = prefix.split("."), rule_id.split(".")
    return len(want) <= len(have) and have[: len(want)] == want


class Selection(NamedTuple):
    select: tuple[str, ...] = ()  # empty: every rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def redirected(self, redirects: Mapping[str, str]) -> Selection:
        """The same selection with renamed rule ids replaced by their new ids."""
        fix = lambda ids: tuple(redirects.get(i, i) for i in ids)  # noqa: E731
        return Selection(fix(self.select), fix(self.extend_select), fix(self.ignore))

    def includes(self, rule_id: str) -> bool:
        chosen = (not self.select or any(prefix_matches(p, rule_id) for p in self.select)) or any(
            prefix_matches(p, rule_id) for p in self.extend_select
        )
        if not chosen:
            return False
        # The most specific matching prefix wins, as in ruff: --select a.b.c --ignore a.b keeps a.b.c.
        best_select = max((len(p.split(".")) for p in self.select + self.extend_select if prefix_matches(p, rule_id)), default=0)
        best_ignore = max((len(p.split(".")) for p in self.ignore if prefix_matches(p, rule_id)), default=-1)
        return best_ignore < best_select or best_ignore == -1


def unknown_prefixes(prefixes: Sequence[str], rule_ids: Iterable[str]) -> list[str]:
    ids = list(rule_ids)
    return [p for p in prefixes if not any(prefix_matches(p, i) for i in ids)]
