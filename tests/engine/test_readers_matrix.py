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

# Why each listed pair misses (anndata has none: every anndata pair agrees).
CHUNK_FAULT = (
    "a damaged chunk (truncated, of the wrong size, failing its checksum, not decompressing): reader facts come from "
    "metadata and clause results, and without --deep the validation decodes no chunk, so no fact shows it"
)
READ_DIFFERENTLY = "wrong-values against another reader's reading of the same store; no fact of the store found for it yet"
MISFILED = (
    "the matrix files this store (a Zarr v3 store written by TensorStore) under zarr-v2; the prediction reads it as "
    "zarr-v3, so no zarr-v2 verdict is given for it and no rule is drawn from it"
)
V2_BESIDE_V3 = (
    "zarr-python 2 reads the Zarr v2 documents kept beside zarr.json; no fact condition sees the keys stored beside a "
    "node's document yet, so readers.zarr-python.zarr-v3-before-3 fires on it"
)
NO_RULE_YET = (
    "the reader's refusal follows from no clause failure and no fact written yet (the reader's error is in the "
    "comment): a rule to write from the matrix"
)
for _case, _reader in [
    ("conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr", "tensorstore@0.1.86"),
    ("conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr", "zarr-python@2.18.7"),
    ("conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v2/chunk-wrong-size.zarr", "zarr-python@2.18.7"),
    ("conformance-corpus/zarr/zarr-v2/chunk-wrong-size.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v2/chunk-wrong-size.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v3/chunk-crc32c-mismatch-deep.zarr", "tensorstore@0.1.86"),
    ("conformance-corpus/zarr/zarr-v3/chunk-crc32c-mismatch-deep.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v3/chunk-crc32c-mismatch-deep.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v3/chunk-gzip-not-gzip-format-deep.zarr", "tensorstore@0.1.86"),
    ("conformance-corpus/zarr/zarr-v3/chunk-gzip-not-gzip-format-deep.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v3/chunk-gzip-not-gzip-format-deep.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v3/chunk-truncated-deep.zarr", "tensorstore@0.1.86"),
    ("conformance-corpus/zarr/zarr-v3/chunk-truncated-deep.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v3/chunk-truncated-deep.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v3/shard-inner-chunk-corrupt-deep.zarr", "tensorstore@0.1.86"),
    ("conformance-corpus/zarr/zarr-v3/shard-inner-chunk-corrupt-deep.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v3/shard-inner-chunk-corrupt-deep.zarr", "zarrs@0.2.3"),
    ("conformance-corpus/zarr/zarr-v3/valid-every-element.zarr", "tensorstore@0.1.86"),
    ("corpus-public/zarr-v2/written-by-zarr-python-3.1.6/zarr3_writes_v2.zarr", "zarrs@0.2.3"),
    ("corpus-public/zarr-v2/written-by-zarr.js-0.6.3/zarrjs_mixed.zarr", "zarrs@0.2.3"),
    ("corpus-public/zarr-v2/zarrs-testdata_v2_array_blosc_F.zarr", "zarrs@0.2.3"),
    ("corpus-public/zarr-v2/zarrs-testdata_v2_array_none_F.zarr", "zarrs@0.2.3"),
]:
    EXPECTED_MISMATCHES[(_case, _reader)] = CHUNK_FAULT
for _case, _reader in [
    ("conformance-corpus/zarr/zarr-v2/consolidated-stale.zarr", "zarr-python@2.18.7"),
    ("corpus-public/zarr-v2/zarrs-testdata_compat_bool_v2_fv_null.zarr", "zarr-python@2.18.7"),
    ("corpus-public/zarr-v2/zarrs-testdata_compat_str_v2_fv_null.zarr", "zarr-python@2.18.7"),
]:
    EXPECTED_MISMATCHES[(_case, _reader)] = READ_DIFFERENTLY
for _case, _reader in [
    ("conformance-corpus/zarr/zarr-v3/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "zarr-python@3.1.6"),
    ("conformance-corpus/zarr/zarr-v3/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "zarrs@0.2.3"),
    ("corpus-public/zarr-v2/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "tensorstore@0.1.86"),
    ("corpus-public/zarr-v2/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "zarr-python@2.18.7"),
    ("corpus-public/zarr-v2/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "zarr-python@3.1.6"),
    ("corpus-public/zarr-v2/written-by-tensorstore-0.1.86/tensorstore_arrays.zarr", "zarrs@0.2.3"),
]:
    EXPECTED_MISMATCHES[(_case, _reader)] = MISFILED
for _case, _reader in [
    ("conformance-corpus/zarr/zarr-v3/valid-v2-documents-beside-zarr-json.zarr", "zarr-python@2.18.7"),
]:
    EXPECTED_MISMATCHES[(_case, _reader)] = V2_BESIDE_V3
for _case, _reader in [
    (
        "conformance-corpus/anndata/zarr-v3/nullable-strings-off.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/anndata/zarr-v3/valid-every-element.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/anndata/zarr-v3/valid-sharded.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/anndata/zarr-v3/valid-zero-obs.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/reference-dataset-pickle.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/reference-dataset-pickle.zarr",
        "zarrs@0.2.3",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/specloc-custom-location.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/specloc-custom-location.zarr",
        "zarrs@0.2.3",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/valid-every-element.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/valid-every-element.zarr",
        "zarrs@0.2.3",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/valid-relative-paths.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/hdmf-zarr/zarr-v2/valid-relative-paths.zarr",
        "zarrs@0.2.3",
    ),  # ValueError: No Zarr data type found that matches {'name': '|O', 'object_codec_id': 'json2'}
    (
        "conformance-corpus/ome-zarr/zarr-v2/valid-bioformats2raw.zarr",
        "ome-zarr-py@0.18.0",
    ),  # LookupError: ome_zarr.reader.Reader found no node to read
    (
        "conformance-corpus/ome-zarr/zarr-v3/label-value-undescribed.zarr",
        "ome-zarr-models@1.7",
    ),  # ValidationError: LabelsAttrs: version: Field required
    (
        "conformance-corpus/ome-zarr/zarr-v3/valid-bioformats2raw.zarr",
        "ome-zarr-py@0.18.0",
    ),  # LookupError: ome_zarr.reader.Reader found no node to read
    (
        "conformance-corpus/ome-zarr/zarr-v3/valid-every-element.zarr",
        "ome-zarr-models@1.7",
    ),  # ValidationError: LabelsAttrs: version: Field required
    (
        "conformance-corpus/zarr/zarr-v2/attrs-not-an-object.zarr",
        "zarr-python@2.18.7",
    ),  # AttributeError: 'list' object has no attribute 'keys'
    (
        "conformance-corpus/zarr/zarr-v2/attrs-not-an-object.zarr",
        "zarr-python@3.1.6",
    ),  # TypeError: Expected dict with string keys. Got <class 'list'> instead.
    (
        "conformance-corpus/zarr/zarr-v2/attrs-not-an-object.zarr",
        "zarrs@0.2.3",
    ),  # TypeError: Expected dict with string keys. Got <class 'list'> instead.
    (
        "conformance-corpus/zarr/zarr-v2/chunk-wrong-size.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error reading local file "conformance-corpus/zarr/zarr-v2/chunk-wro
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-complex-not-a-pair.zarr",
        "zarr-python@2.18.7",
    ),  # MetadataError: error decoding metadata (cause: TypeError: 'int' object is not subscriptable)
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-complex-not-a-pair.zarr",
        "zarr-python@3.1.6",
    ),  # TypeError: Invalid type: 0. Expected a float or a special string encoding of a float.
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-complex-not-a-pair.zarr",
        "zarrs@0.2.3",
    ),  # TypeError: Invalid type: 0. Expected a float or a special string encoding of a float.
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-outside-dtype-range.zarr",
        "zarr-python@2.18.7",
    ),  # MetadataError: error decoding metadata (cause: OverflowError: Python integer 300 out of bounds for i
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-outside-dtype-range.zarr",
        "zarr-python@3.1.6",
    ),  # OverflowError: Python int too large to convert to C long
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-outside-dtype-range.zarr",
        "zarrs@0.2.3",
    ),  # OverflowError: Python int too large to convert to C long
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-void-not-base64.zarr",
        "zarr-python@2.18.7",
    ),  # MetadataError: error decoding metadata (cause: TypeError: argument should be a bytes-like object or
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-void-not-base64.zarr",
        "zarr-python@3.1.6",
    ),  # TypeError: Invalid type: 0. Expected a string.
    (
        "conformance-corpus/zarr/zarr-v2/fill-value-void-not-base64.zarr",
        "zarrs@0.2.3",
    ),  # TypeError: Invalid type: 0. Expected a string.
    (
        "conformance-corpus/zarr/zarr-v2/group-metadata-missing-zarr-format.zarr",
        "zarr-python@2.18.7",
    ),  # MetadataError: unsupported zarr format: None
    (
        "conformance-corpus/zarr/zarr-v2/keys-not-normalized-zip.zip",
        "zarr-python@2.18.7",
    ),  # ValueError: path containing '.' or '..' segment not allowed
    (
        "conformance-corpus/zarr/zarr-v2/keys-not-normalized-zip.zip",
        "zarr-python@3.1.6",
    ),  # ValueError: The path '..' is invalid because its string representation contains '.' or '..' segments
    (
        "conformance-corpus/zarr/zarr-v2/keys-not-normalized-zip.zip",
        "zarrs@0.2.3",
    ),  # ValueError: The path '..' is invalid because its string representation contains '.' or '..' segments
    (
        "conformance-corpus/zarr/zarr-v2/valid-every-element.zarr",
        "zarrs@0.2.3",
    ),  # RuntimeError: Non-native byte order not supported
    (
        "conformance-corpus/zarr/zarr-v3/array-metadata-not-json.zarr",
        "tensorstore@0.1.86",
    ),  # JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 41 (char 40)
    (
        "conformance-corpus/zarr/zarr-v3/chunk-grid-rectilinear.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/zarr/zarr-v3/chunk-grid-rectilinear.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: Unknown chunk grid. Got rectilinear.
    (
        "conformance-corpus/zarr/zarr-v3/chunk-grid-rectilinear.zarr",
        "zarrs@0.2.3",
    ),  # ValueError: Unknown chunk grid. Got rectilinear.
    (
        "conformance-corpus/zarr/zarr-v3/valid-hand-written.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr3" driver: Error reading local file "conformance
    (
        "conformance-corpus/zarr/zarr-v3/valid-hand-written.zarr",
        "zarr-python@3.1.6",
    ),  # ValueError: No Zarr data type found that matches 'r16'
    ("conformance-corpus/zarr/zarr-v3/valid-hand-written.zarr", "zarrs@0.2.3"),  # TypeError: Expected dict, got <class 'str'>
    (
        "corpus-public/nwb-zarr/hdmf-zarr_ecephys_tutorial.nwb.zarr",
        "zarr-python@2.18.7",
    ),  # ModuleNotFoundError: No module named 'hdmf_zarr'
    (
        "corpus-public/nwb-zarr/written-by-hdmf-zarr-0.13.0/ecephys_links_pickle.nwb.zarr",
        "zarr-python@2.18.7",
    ),  # ModuleNotFoundError: No module named 'hdmf_zarr'
    (
        "corpus-public/zarr-v2/written-by-zarr-python-2.18.3/mixed_dtypes.zarr",
        "zarrs@0.2.3",
    ),  # RuntimeError: Non-native byte order not supported
    (
        "corpus-public/zarr-v2/zarrs-testdata_compat_adler32.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr" driver: Error reading local file "corpus-publi
    (
        "corpus-public/zarr-v2/zarrs-testdata_compat_fixed_length_utf32_v2_be.zarr",
        "tensorstore@0.1.86",
    ),  # ValueError: FAILED_PRECONDITION: Error opening "zarr" driver: Error reading local file "corpus-publi
    (
        "corpus-public/zarr-v2/zarrs-testdata_compat_fixed_length_utf32_v2_be.zarr",
        "zarrs@0.2.3",
    ),  # RuntimeError: Non-native byte order not supported
]:
    EXPECTED_MISMATCHES[(_case, _reader)] = NO_RULE_YET


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
