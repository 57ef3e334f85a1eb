"""The reader rules against the committed compatibility matrix (compat/matrix.json): the prediction for every measured
case and reader version agrees with what the reader did, every rule's cited cases show its outcome, and the held-back
cases (never seen while writing the rules) are predicted right.

Each case's file is validated once, whatever the number of tests that ask (`predicted`). Cases of the public corpus
are found at `<repo>/../shared/corpus-public` and skipped where it is absent.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache, lru_cache
from pathlib import Path

import pytest

import spec_validate
from spec_validate.engine.readers.packs import load_readers
from spec_validate.model import DOES_NOT_OPEN, OPENS

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
MATRIX_FILE = REPO / "compat" / "matrix.json"
HELD_BACK = "held-back"
HELD_BACK_SHARE = 0.95

# (case id, reader@version) -> why the prediction does not agree with the matrix there. Every entry is a known miss,
# listed rather than hidden; one that no longer misses fails `test_matrix_expected_mismatches_are_current`.
EXPECTED_MISMATCHES: dict[tuple[str, str], str] = {}

# (Every pair agrees now. The last two, zarr-python 2.18.7 refusing the public hdmf-zarr stores whose pickles call
# hdmf_zarr.utils.ZarrReference, are predicted from that fact: hdmf-zarr.dataset.pickle-imports notices it and
# readers.zarr-python.pickle-imports-v2 fires. conformance-corpus/hdmf-zarr/zarr-v2/reference-dataset-pickle.zarr,
# pickled plain dicts, calls no class and is predicted to open, as zarr-python 2 did.)


@lru_cache(maxsize=1)
def matrix() -> dict:
    return json.loads(MATRIX_FILE.read_text(encoding="utf-8")) if MATRIX_FILE.is_file() else {"cases": {}, "results": {}}


def case_path(case_id: str) -> Path:
    return SHARED / case_id if case_id.startswith("corpus-public/") else REPO / case_id


def measured_cases(source_held_back: bool) -> list[str]:
    return sorted(
        cid
        for cid, case in matrix()["cases"].items()
        if (case.get("source") == HELD_BACK) == source_held_back and case_path(cid).exists()
    )


@cache
def predicted(case_id: str) -> dict[str, str]:
    """reader@version -> the predicted verdict, for one case's file, validated once, with --deep: the readers read
    every chunk, so the clauses on chunk data (decoded only under --deep) are facts the prediction needs."""
    report = spec_validate.validate(case_path(case_id), readers=True, jobs=1, deep=True)
    verdicts = report.readers.readers if report.readers is not None else ()
    return {f"{r.reader}@{v.version}": v.verdict for r in verdicts for v in r.versions}


def expected(outcome: str) -> str:
    return OPENS if outcome == "opened" else DOES_NOT_OPEN


def mismatches(case_id: str) -> dict[str, tuple[str, str]]:
    """reader@version -> (expected, predicted) where they differ, over the versions measured on this case."""
    got = predicted(case_id)
    out = {}
    for key, results in sorted(matrix()["results"].items()):
        if case_id not in results:
            continue
        want = expected(results[case_id]["outcome"])
        have = got.get(key, "no verdict")
        if have != want:
            out[key] = (want, have)
    return out


pytestmark = pytest.mark.skipif(not MATRIX_FILE.is_file(), reason="no compat/matrix.json")


@pytest.mark.parametrize("case_id", measured_cases(False))
def test_matrix_prediction_agrees(case_id):
    missed = {k: v for k, v in mismatches(case_id).items() if (case_id, k) not in EXPECTED_MISMATCHES}
    assert not missed, "\n".join(
        f"{case_id}: {key}: measured {want}, predicted {have} ({matrix()['results'][key][case_id].get('error', '')})"
        for key, (want, have) in missed.items()
    )


def test_matrix_agreement_per_reader(capsys):
    pairs: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    for case_id in measured_cases(False):
        wrong = mismatches(case_id)
        for key, results in matrix()["results"].items():
            if case_id in results:
                reader = key.split("@")[0]
                pairs[reader] += 1
                missed[reader] += key in wrong
    with capsys.disabled():
        for reader in sorted(pairs):
            print(f"\n{reader}: {pairs[reader]} pairs, {missed[reader]} mismatches", end="")
        print()
    assert sum(missed.values()) == sum(1 for (cid, _) in EXPECTED_MISMATCHES if case_path(cid).exists())


def test_matrix_expected_mismatches_are_current():
    stale = [(cid, key) for (cid, key) in EXPECTED_MISMATCHES if case_path(cid).exists() and key not in mismatches(cid)]
    assert not stale, f"no longer a mismatch: {stale}"


def test_matrix_rule_cases_show_the_rule():
    from packaging.specifiers import SpecifierSet

    results = matrix()["results"]
    for pack in load_readers().packs:
        for rule in pack.rules:
            for case_id in rule.cases:
                assert case_id in matrix()["cases"], f"{rule.id}: {case_id} is no case of the matrix"
                shown = [
                    key
                    for key, found in results.items()
                    if key.split("@")[0] == rule.reader
                    and SpecifierSet(rule.versions).contains(key.split("@")[1], prereleases=True)
                    and found.get(case_id, {}).get("outcome") == rule.outcome
                ]
                assert shown, f"{rule.id}: {case_id} shows no version in {rule.versions!r} {rule.outcome}"


def test_matrix_held_back_share(capsys):
    cases = measured_cases(True)
    if not cases:
        pytest.skip("no held-back case with its file here (compat/heldback/files comes with the compat branch)")
    right = total = 0
    for case_id in cases:
        wrong = mismatches(case_id)
        for results in matrix()["results"].values():
            if case_id in results:
                total += 1
        right += sum(1 for key, results in matrix()["results"].items() if case_id in results and key not in wrong)
    with capsys.disabled():
        print(f"\nheld-back: {right} of {total} predicted right ({right / total:.1%})")
    assert right / total >= HELD_BACK_SHARE
