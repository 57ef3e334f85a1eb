"""A name that counts the comparisons made with it: tests count work (never time it) to show a check linear."""

from __future__ import annotations


class CountingName(str):
    """A str that counts every comparison made with it (`CountingName.comparisons`, shared by all of them).

    A check comparing each name with every other (`list.count`, or `in` on a list, per entry) makes n**2 of them;
    a linear one a few per name, however many names there are.
    """

    comparisons = 0

    def _count(self, other: object, op: str) -> bool:
        CountingName.comparisons += 1
        return getattr(str, op)(self, other)

    def __eq__(self, other: object) -> bool:
        return self._count(other, "__eq__")

    def __ne__(self, other: object) -> bool:
        return self._count(other, "__ne__")

    def __lt__(self, other: str) -> bool:
        return self._count(other, "__lt__")

    def __le__(self, other: str) -> bool:
        return self._count(other, "__le__")

    def __gt__(self, other: str) -> bool:
        return self._count(other, "__gt__")

    def __ge__(self, other: str) -> bool:
        return self._count(other, "__ge__")

    __hash__ = str.__hash__
