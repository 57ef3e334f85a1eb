"""Reader verdicts: the reader packs and their schema, the fact grammar, the coarse format, and the prediction per
measured version (opens / does not open / unknown), on a small synthetic measured.yaml and reader pack."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from reader_packs import CASE, GZIP, H5AD, INDPTR, NULLABLE, PLAIN, rule, vocabulary_of, write_readers

import spec_validate
from spec_validate.engine.readers.conditions import CONDITIONS, holds
from spec_validate.engine.readers.facts import store_facts
from spec_validate.engine.readers.formats import coarse_format
from spec_validate.engine.readers.packs import load_readers
from spec_validate.engine.readers.predict import check_requirements
from spec_validate.errors import InputError, PackError
from spec_validate.model import DOES_NOT_OPEN, OPENS, UNKNOWN
from spec_validate.nodes.open import open_store
from spec_validate.report.verdict import reader_gate


def verdicts(path: Path, folder: Path, readers=True, **options) -> dict[str, tuple[str, tuple[str, ...], str]]:
    """version -> (verdict, rule ids that fire, reason) for anndata."""
    report = spec_validate.validate(path, readers=readers, reader_packs=folder, **options)
    anndata = report.readers.reader("anndata")
    return {v.version: (v.verdict, tuple(f.rule for f in v.facts), v.reason) for v in anndata.versions}


# ------------------------------------------------------------------------------------------------ prediction
def test_predict_opens_when_measured_and_no_rule_fires(tmp_path):
    found = verdicts(PLAIN, write_readers(tmp_path / "r", [rule()]))
    assert found["0.10.9"] == (OPENS, (), "")
    assert found["0.11.4"] == (OPENS, (), "")


def test_predict_does_not_open_where_a_rule_fires_in_its_versions(tmp_path):
    found = verdicts(NULLABLE, write_readers(tmp_path / "r", [rule()]))
    assert found["0.10.9"] == (DOES_NOT_OPEN, ("readers.anndata.nullable-string-array",), "")
    assert found["0.11.4"][0] == OPENS  # outside the rule's versions
    report = spec_validate.validate(NULLABLE, readers=True, reader_packs=tmp_path / "r")
    (fact,) = report.readers.reader("anndata").versions[0].facts
    assert (fact.outcome, fact.cases) == ("refused", (CASE,))
    assert fact.fact.startswith("an element encoded as nullable-string-array")


def test_predict_unknown_for_a_version_never_measured_on_the_format(tmp_path):
    found = verdicts(PLAIN, write_readers(tmp_path / "r", [rule()]))
    assert found["0.13.4"] == (UNKNOWN, (), "not measured on anndata-h5ad")
    assert found["0.12.0"][0] == OPENS


def test_predict_unknown_for_a_fact_no_measured_case_had(tmp_path):
    # The measured cases never had gzip: no version is predicted to open a gzip-compressed file.
    found = verdicts(GZIP, write_readers(tmp_path / "r", [rule()], vocabulary=vocabulary_of(PLAIN)))
    assert {v for v, _, _ in found.values()} == {UNKNOWN}
    assert "codec gzip" in found["0.11.4"][2]
    report = spec_validate.validate(GZIP, readers=True, reader_packs=tmp_path / "r")
    assert report.readers.unseen == ("codec gzip",)


def test_predict_a_firing_rule_beats_an_unseen_fact(tmp_path):
    found = verdicts(NULLABLE, write_readers(tmp_path / "r", [rule()], vocabulary=vocabulary_of(PLAIN)))
    assert found["0.10.9"][0] == DOES_NOT_OPEN  # the rule decides, whatever else the store has
    assert found["0.11.4"][0] == UNKNOWN  # nullable-string-array 0.1.0 was never measured


def test_predict_no_reader_measured_on_the_format_gives_no_verdict(tmp_path):
    folder = write_readers(tmp_path / "r", [rule()], versions={"0.13.4": {"formats": ["anndata-zarr-v2"]}})
    report = spec_validate.validate(PLAIN, readers=True, reader_packs=folder)
    assert report.readers.format == "anndata-h5ad"
    assert report.readers.readers == ()


def test_predict_failed_clause_fires_and_is_unknown_when_not_evaluated(tmp_path):
    failed = rule(
        id="readers.anndata.indptr-decreasing",
        versions=">=0.11",
        when={"failed": ["anndata.csr_matrix.indptr-monotonic"]},
        fact="a CSR matrix whose indptr decreases",
        outcome="crashed",
    )
    folder = write_readers(tmp_path / "r", [failed])
    assert verdicts(INDPTR, folder)["0.11.4"][0] == DOES_NOT_OPEN
    assert verdicts(PLAIN, folder)["0.11.4"][0] == OPENS  # evaluated there, and passed
    # Not selected, the clause says nothing: the rule is not decided and the version is unknown, never "opens".
    unknown = verdicts(INDPTR, folder, ignore=["anndata.csr_matrix.indptr-monotonic"])["0.11.4"]
    assert unknown[0] == UNKNOWN
    assert "readers.anndata.indptr-decreasing not decided" in unknown[2]


def test_predict_readers_off_by_default():
    assert spec_validate.validate(PLAIN).readers is None


# ------------------------------------------------------------------------------------------------ the gate
def test_gate_names_the_version_and_the_fact(tmp_path):
    folder = write_readers(tmp_path / "r", [rule()])
    report = spec_validate.validate(NULLABLE, readers=["anndata>=0.10,<0.13"], reader_packs=folder)
    (miss,) = reader_gate(report)  # 0.10.9 does not open; 0.11.4 and 0.12.0 open
    assert (miss.reader, miss.version, miss.verdict) == ("anndata", "0.10.9", DOES_NOT_OPEN)
    assert "nullable-string-array" in miss.message and CASE in miss.message
    assert reader_gate(spec_validate.validate(NULLABLE, readers=["anndata>=0.11,<0.13"], reader_packs=folder)) == []


def test_gate_fails_on_unknown_and_on_no_measured_version(tmp_path):
    folder = write_readers(tmp_path / "r", [rule()])
    report = spec_validate.validate(PLAIN, readers=["anndata>=0.13", "anndata<0.10"], reader_packs=folder)
    misses = {(m.requirement, m.version, m.verdict) for m in reader_gate(report)}
    assert misses == {("anndata>=0.13", "0.13.4", UNKNOWN), ("anndata<0.10", None, "")}


def test_gate_requirement_must_name_a_known_reader(tmp_path):
    known = load_readers(write_readers(tmp_path / "r", [rule()]))
    assert check_requirements(["anndata>=0.10"], known) == ("anndata>=0.10",)
    with pytest.raises(InputError, match="no reader named 'zarr'"):
        check_requirements(["zarr>=3"], known)
    with pytest.raises(InputError, match="not a requirement"):
        check_requirements([">=0.10"], known)


# ------------------------------------------------------------------------------------------------ the packs
def test_pack_rule_without_cases_is_refused(tmp_path):
    folder = write_readers(tmp_path / "r", [rule(cases=[])])
    with pytest.raises(PackError, match=r"anndata\.yaml: readers\.anndata\.nullable-string-array: cases: .* should be non-empty"):
        load_readers(folder)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"when": {"python": "x"}}, "unknown key 'python'", id="unknown-condition"),
        pytest.param({"when": {"node": {"colour": "red"}}}, "unknown key 'colour'", id="unknown-selector-key"),
        pytest.param({"versions": "later than 0.10"}, "no PEP 440 specifier set", id="bad-versions"),
        pytest.param({"formats": ["anndata-h5"]}, "unknown format 'anndata-h5'", id="unknown-format"),
        pytest.param({"cases": ["conformance-corpus/none.h5ad"]}, "is no measured case", id="case-not-measured"),
        pytest.param({"id": "readers.zarr.x"}, "has an id starting readers.anndata.", id="id-of-another-reader"),
        pytest.param({"outcome": "opened"}, "'opened' is not one of", id="bad-outcome"),
    ],
)
def test_pack_refuses_a_bad_rule_in_one_line(tmp_path, fields, message):
    with pytest.raises(PackError, match=message) as info:
        load_readers(write_readers(tmp_path / "r", [rule(**fields)]))
    assert "\n" not in str(info.value)
    assert "anndata.yaml" in str(info.value)


def test_pack_measured_yaml_is_validated(tmp_path):
    folder = write_readers(tmp_path / "r", [rule()])
    (folder / "measured.yaml").write_text("measured: '2026-11-29'\nreaders: {}\nvocabulary: {}\n")
    with pytest.raises(PackError, match=r"measured\.yaml: .*'cases' is a required property"):
        load_readers(folder)


def test_pack_builtin_readers_load():
    readers = load_readers()
    for pack in readers.packs:
        assert pack.rules, pack.path


# ------------------------------------------------------------------------------------------------ the fact grammar
@pytest.fixture(scope="module")
def gzip_facts():
    with open_store(str(GZIP), True) as tree:
        evaluated = ["anndata.x.failed", "anndata.x.passed", "anndata.x.noticed"]
        yield store_facts(tree, failed=["anndata.x.failed"], evaluated=evaluated, noticed=["anndata.x.noticed"])


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        pytest.param({"node": {"encoding-type": "categorical"}}, True, id="node-matches"),
        pytest.param({"node": {"encoding-type": "nullable-string-array"}}, False, id="node-none"),
        pytest.param({"codec": "gzip"}, True, id="codec"),
        pytest.param({"codec": ["zstd", "blosc*"]}, False, id="codec-none"),
        pytest.param({"dtype": "int*"}, True, id="dtype-glob"),
        pytest.param({"dtype": "<f2"}, False, id="dtype-none"),
        pytest.param({"storage_format": "hdf5"}, True, id="storage"),
        pytest.param({"storage_format": "zarr-*"}, False, id="storage-none"),
        pytest.param({"failed": ["anndata.x.failed"]}, True, id="failed"),
        pytest.param({"failed": ["anndata.x.passed"]}, False, id="failed-passed"),
        pytest.param({"failed": ["anndata.x.unseen"]}, None, id="failed-not-evaluated"),
        pytest.param({"failed": ["anndata.x.noticed"]}, False, id="failed-a-notice-is-no-failure"),
        pytest.param({"noticed": ["anndata.x.noticed"]}, True, id="noticed"),
        pytest.param({"noticed": ["anndata.x.passed"]}, False, id="noticed-passed"),
        pytest.param({"noticed": ["anndata.x.failed", "anndata.x.unseen"]}, None, id="noticed-not-evaluated"),
        pytest.param({"not": {"codec": "gzip"}}, False, id="not"),
        pytest.param({"not": {"failed": ["anndata.x.unseen"]}}, None, id="not-undecided"),
        pytest.param({"any_of": [{"codec": "zstd"}, {"failed": ["anndata.x.unseen"]}]}, None, id="any-of-undecided"),
        pytest.param({"any_of": [{"codec": "gzip"}, {"failed": ["anndata.x.unseen"]}]}, True, id="any-of-true"),
        pytest.param({"all_of": [{"codec": "zstd"}, {"failed": ["anndata.x.unseen"]}]}, False, id="all-of-false"),
        pytest.param({"codec": "gzip", "storage_format": "hdf5"}, True, id="conjunction"),
    ],
)
def test_condition_holds(gzip_facts, when, expected):
    assert holds(when, gzip_facts) is expected


def test_condition_each_has_a_docstring():
    assert all(c.doc for c in CONDITIONS.values())


# ------------------------------------------------------------------------------------------------ the coarse format
@pytest.mark.parametrize(
    ("storage", "applied", "attrs", "expected"),
    [
        pytest.param("hdf5", {"anndata": ["/"]}, {}, "anndata-h5ad", id="h5ad"),
        pytest.param("zarr-v3", {"anndata": ["/"], "zarr3": ["/"]}, {}, "anndata-zarr-v3", id="anndata-zarr-v3"),
        pytest.param("hdf5", {"anndata": ["/mod/rna"]}, {"encoding-type": "MuData"}, "mudata-h5mu", id="mudata"),
        pytest.param("zarr-v2", {"zarr": ["/"]}, {}, "zarr-v2", id="plain-zarr"),
        pytest.param("zarr-v2", {"ome-zarr04": ["/"], "zarr": ["/"]}, {"multiscales": [{"version": "0.4"}]}, "ome-zarr-0.4"),
        pytest.param("zarr-v2", {"ome-zarr04": ["/"]}, {"multiscales": [{"version": "0.3"}]}, "ome-zarr-0.4", id="ome-0.3"),
        pytest.param("zarr-v3", {"ome-zarr05": ["/"]}, {"ome": {"version": "9.9"}}, "ome-zarr-0.5", id="ome-in-zarr-v3"),
        pytest.param("zarr-v2", {"hdmf-zarr": ["/"], "zarr": ["/"]}, {}, "nwb-zarr", id="nwb"),
        pytest.param("hdf5", {"h5seurat": ["/"]}, {}, "h5seurat", id="h5seurat"),
        pytest.param("tiledb", {"cxg": ["/"]}, {}, "cxg", id="cxg"),
        pytest.param("hdf5", {}, {}, None, id="none"),
    ],
)
def test_coarse_format(storage, applied, attrs, expected):
    assert coarse_format(storage, applied, attrs) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("anndata/zarr-v3/valid-zero-obs.zarr", "anndata-zarr-v3", id="anndata-zarr-v3"),
        pytest.param("h5seurat/valid-every-element.h5Seurat", "h5seurat", id="h5seurat"),
        pytest.param("cxg/cxg-0.3.0/valid-every-element.cxg", "cxg", id="cxg"),
    ],
)
def test_coarse_format_of_a_validated_store(tmp_path, path, expected):
    # Only the packs that found a scope count: every pack is run, most apply nowhere.
    folder = write_readers(tmp_path / "r", [rule()])
    corpus = Path(__file__).resolve().parents[2] / "conformance-corpus"
    assert spec_validate.validate(corpus / path, readers=True, reader_packs=folder).readers.format == expected


@pytest.mark.parametrize(
    ("case", "when", "expected"),
    [
        pytest.param("dataframe-index-array-missing.h5ad", {"names_absent_member": {"select": {}, "attr": "_index"}}, True),
        pytest.param(
            "dataframe-column-order-unknown-column.h5ad", {"names_absent_member": {"select": {}, "attr": "column-order"}}, True
        ),
        pytest.param(
            "dataframe-column-order-lists-index.h5ad", {"names_absent_member": {"select": {}, "attr": "column-order"}}, False
        ),
        pytest.param(
            "dataframe-column-two-dimensional.h5ad",
            {"ndim": {"select": {"parent": {"encoding-type": "dataframe"}}, "ndim": 2}},
            True,
        ),
        pytest.param(
            "dataframe-categorical-codes-two-dimensional.h5ad",
            {"ndim": {"select": {"parent": {"encoding-type": "dataframe"}}, "ndim": 2}},
            False,
        ),
        pytest.param("anndata-X-three-dimensional.h5ad", {"ndim": {"select": {"path": "/X"}, "ndim": [3, 4]}}, True),
    ],
)
def test_condition_holds_on_a_case(case, when, expected):
    with open_store(str(H5AD / case), True) as tree:
        assert holds(when, store_facts(tree)) is expected


def test_predict_unknown_for_a_clause_failure_no_measured_case_had(tmp_path):
    # No measured case failed the CSR indptr clause and no rule names it: what a reader does with it is unknown.
    found = verdicts(INDPTR, write_readers(tmp_path / "r", [rule()], vocabulary=vocabulary_of(PLAIN, INDPTR)))
    assert found["0.11.4"][0] == OPENS
    seen = vocabulary_of(PLAIN, INDPTR)
    seen["failed"] = []
    folder = write_readers(tmp_path / "s", [rule()], vocabulary=seen)
    assert verdicts(INDPTR, folder)["0.11.4"] == (
        UNKNOWN,
        (),
        "no measured anndata-h5ad case had a failure of anndata.csr_matrix.indptr-monotonic",
    )


def one_rule_folder(
    tmp_path: Path, stores: tuple[Path, ...], measured_as: tuple[str, str, str], rule: dict, deep: bool = False
) -> tuple[Path, dict[str, set[str]]]:
    """A folder of reader packs with `rule` alone, for the reader, version and format of `measured_as`, its one
    case (the rule's) measured as `rule` says, and the vocabulary of `stores` (validated with `deep`); and that
    vocabulary."""
    reader, version, fmt = measured_as
    words: dict[str, set[str]] = {}
    for path in stores:
        report = spec_validate.validate(path, deep=deep)
        with open_store(str(path), True) as tree:
            for kind, found in store_facts(tree, {r.rule.id for r in report.failures}).vocabulary.items():
                words.setdefault(kind, set()).update(found)
    measured = {
        "measured": "2026-11-29",
        "readers": {reader: {version: {"formats": [fmt]}}},
        "vocabulary": {fmt: {kind: sorted(found) for kind, found in words.items()}},
        "cases": {
            case: {"format": fmt, "source": "conformance-corpus", "not_opened": {f"{reader}@{version}": rule["outcome"]}}
            for case in rule["cases"]
        },
    }
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "measured.yaml").write_text(yaml.safe_dump(measured))
    (folder / f"{reader}.yaml").write_text(yaml.safe_dump({"reader": reader, "title": reader, "rules": [rule]}))
    return folder, words


def test_predict_a_chunk_clause_not_checked_without_deep_is_undecided(tmp_path):
    # zarr.chunks.decoded-size decodes chunks: without --deep it is not checked (never passed), so a rule naming it is
    # undecided and the version unknown, never "opens"; with --deep it fails on the truncated chunk and the rule fires.
    zarr_v2 = Path(__file__).resolve().parents[2] / "conformance-corpus" / "zarr" / "zarr-v2"
    truncated, valid = zarr_v2 / "chunk-truncated.zarr", zarr_v2 / "valid-every-element.zarr"
    case = "conformance-corpus/zarr/zarr-v2/chunk-truncated.zarr"
    chunk_rule = {
        "id": "readers.zarr-python.chunk-not-decoding",
        "versions": ">=3",
        "formats": ["zarr-v2"],
        "when": {"failed": ["zarr.chunks.decoded-size"]},
        "fact": "a chunk that does not decode to its array's chunk size",
        "outcome": "refused",
        "cases": [case],
    }
    folder, _ = one_rule_folder(tmp_path, (truncated, valid), ("zarr-python", "3.1.6", "zarr-v2"), chunk_rule, deep=True)

    def verdict(path: Path, deep: bool) -> tuple[str, str]:
        found = spec_validate.validate(path, readers=True, reader_packs=folder, deep=deep).readers.reader("zarr-python")
        return found.versions[0].verdict, found.versions[0].reason

    shallow = verdict(truncated, False)
    assert shallow[0] == UNKNOWN and "readers.zarr-python.chunk-not-decoding not decided" in shallow[1]
    assert verdict(valid, False)[0] == UNKNOWN  # its chunks are not decoded either: nothing says they decode
    assert verdict(truncated, True)[0] == DOES_NOT_OPEN
    assert verdict(valid, True)[0] == OPENS


ZARR_CASES = Path(__file__).resolve().parents[2] / "conformance-corpus" / "zarr"


@pytest.mark.parametrize(
    ("case", "when", "expected"),
    [
        pytest.param(
            "zarr-v3/chunk-grid-rectilinear.zarr", {"metadata": {"member": "chunk_grid.name", "value": "rectilinear"}}, True
        ),
        pytest.param(
            "zarr-v3/valid-hand-written.zarr", {"metadata": {"member": "chunk_grid.name", "value": "rectilinear"}}, False
        ),
        pytest.param("zarr-v3/valid-hand-written.zarr", {"metadata": {"member": "data_type", "value": "r*"}}, True),
        pytest.param("zarr-v3/valid-hand-written.zarr", {"metadata": {"member": "data_type", "value": ["int*", "uint*"]}}, False),
        pytest.param(
            "zarr-v3/valid-hand-written.zarr", {"metadata": {"select": {"kind": "group"}, "member": "data_type"}}, False
        ),
        pytest.param("zarr-v3/valid-hand-written.zarr", {"metadata": {"select": {"kind": "array"}, "member": "data_type"}}, True),
        pytest.param("zarr-v3/valid-hand-written.zarr", {"metadata": {"member": "zarr_format", "value": "3"}}, True),
    ],
)
def test_condition_metadata_member(case, when, expected):
    with open_store(str(ZARR_CASES / case), True) as tree:
        assert holds(when, store_facts(tree)) is expected


@pytest.mark.parametrize(
    ("case", "when", "expected"),
    [
        pytest.param("zarr-v2/fill-value-complex-not-a-pair.zarr", {"fill_value": {"dtype_kind": "c", "json": "number"}}, True),
        pytest.param("zarr-v2/fill-value-complex-not-a-pair.zarr", {"fill_value": {"dtype_kind": "c", "json": "array"}}, False),
        pytest.param("zarr-v2/fill-value-void-not-base64.zarr", {"fill_value": {"dtype_kind": "V", "json": "number"}}, True),
        pytest.param("zarr-v2/fill-value-bytes-not-base64.zarr", {"fill_value": {"dtype_kind": "V", "json": "number"}}, False),
        pytest.param(
            "zarr-v2/fill-value-outside-dtype-range.zarr", {"fill_value": {"dtype_kind": ["i", "u"], "outside_range": True}}, True
        ),
        pytest.param(
            "zarr-v2/fill-value-int-as-string.zarr", {"fill_value": {"dtype_kind": ["i", "u"], "outside_range": True}}, False
        ),
        pytest.param("zarr-v2/fill-value-int-as-string.zarr", {"fill_value": {"dtype_kind": "i", "json": "string"}}, True),
        pytest.param("zarr-v3/valid-hand-written.zarr", {"fill_value": {"dtype_kind": "c", "json": "number"}}, False),
    ],
)
def test_condition_fill_value(case, when, expected):
    # The fill value as stored, with the array's data type kind: a complex or void fill value written as a number,
    # an integer outside its type's range (the readers refuse them), apart from an integer written as a string.
    with open_store(str(ZARR_CASES / case), True) as tree:
        assert holds(when, store_facts(tree)) is expected


NOT_OBJECT = ["array", "string", "number", "boolean", "null"]
DOT_SEGMENT = ["..", "../*", "*/../*", "*/.."]
V2_BESIDE_EVERY_NODE = {
    "any_of": [
        {"stored_key": {"select": {"kind": "group"}, "key": ".zgroup", "absent": True}},
        {"stored_key": {"select": {"kind": "array"}, "key": ".zarray", "absent": True}},
    ]
}


@pytest.mark.parametrize(
    ("case", "when", "expected"),
    [
        pytest.param("zarr-v2/attrs-not-an-object.zarr", {"document": {"name": ".zattrs", "json": NOT_OBJECT}}, True),
        # a bare NaN inside an object is no strict JSON, but the attributes are an object: every reader opens it
        pytest.param("zarr-v2/attrs-bare-nan.zarr", {"document": {"name": ".zattrs", "json": NOT_OBJECT}}, False),
        pytest.param("zarr-v2/attrs-bare-nan.zarr", {"document": {"name": ".zattrs", "json": "object"}}, True),
        pytest.param(
            "zarr-v2/attrs-not-an-object.zarr",
            {"document": {"select": {"root": True}, "name": ".zattrs", "json": NOT_OBJECT}},
            False,
            id="document-selected-node-only",
        ),
        pytest.param("zarr-v3/array-metadata-not-json.zarr", {"document": {"name": "zarr.json", "json": "not-json"}}, True),
        # a group without node_type is JSON: TensorStore opens it (it reads arrays only)
        pytest.param("zarr-v3/group-missing-node-type.zarr", {"document": {"name": "zarr.json", "json": "not-json"}}, False),
        pytest.param("zarr-v2/keys-not-normalized-zip.zip", {"raw_key": DOT_SEGMENT}, True),
        # a backslash in a key is no '..' segment: every reader opens it
        pytest.param("zarr-v2/keys-backslash.zarr", {"raw_key": DOT_SEGMENT}, False),
        pytest.param("zarr-v2/keys-backslash.zarr", {"raw_key": "*\\*"}, True),
        pytest.param(
            "zarr-v2/group-metadata-missing-zarr-format.zarr",
            {"metadata": {"select": {"kind": "group"}, "member": "zarr_format", "absent": True}},
            True,
        ),
        # a bare Infinity beside zarr_format: zarr-python 2 opens it
        pytest.param(
            "zarr-v2/group-bare-infinity.zarr",
            {"metadata": {"select": {"kind": "group"}, "member": "zarr_format", "absent": True}},
            False,
        ),
        pytest.param(
            "zarr-v2/dtype-datetime-without-unit.zarr",
            {"metadata": {"select": {"kind": "array"}, "member": "fill_value", "value": "null", "chunks_missing": True}},
            True,
        ),
        pytest.param("zarr-v3/valid-v2-documents-beside-zarr-json.zarr", V2_BESIDE_EVERY_NODE, False),
        # a .zgroup at the root only: the array has no .zarray beside its zarr.json
        pytest.param("zarr-v3/root-v2-and-v3-metadata.zarr", V2_BESIDE_EVERY_NODE, True),
        pytest.param("zarr-v3/valid-hand-written.zarr", V2_BESIDE_EVERY_NODE, True),
        pytest.param(
            "zarr-v3/valid-v2-documents-beside-zarr-json.zarr",
            {"stored_key": {"select": {"kind": "array"}, "key": "*/.zarray"}},
            False,
            id="stored-key-relative-to-the-node",
        ),
    ],
)
def test_condition_stored_documents_and_keys(case, when, expected):
    with open_store(str(ZARR_CASES / case), True) as tree:
        assert holds(when, store_facts(tree)) is expected


def _v2_array(folder: Path, fill_value, chunks_stored: list[str]) -> Path:
    import json

    (folder / "x").mkdir(parents=True)
    (folder / ".zgroup").write_text('{"zarr_format": 2}')
    document = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "fill_value": fill_value, "order": "C"}
    (folder / "x" / ".zarray").write_text(json.dumps({**document, "filters": None, "compressor": None}))
    for key in chunks_stored:
        (folder / "x" / key).write_bytes(bytes(8))
    return folder


@pytest.mark.parametrize(
    ("fill_value", "stored", "expected"),
    [(None, ["0"], True), (None, ["0", "1"], False), (0, ["0"], False)],
)
def test_condition_metadata_chunks_missing(tmp_path, fill_value, stored, expected):
    store = _v2_array(tmp_path / "s.zarr", fill_value, stored)
    when = {"metadata": {"select": {"kind": "array"}, "member": "fill_value", "value": "null", "chunks_missing": True}}
    with open_store(str(store), True) as tree:
        assert holds(when, store_facts(tree)) is expected


def test_condition_stored_key_on_hdf5_is_false():
    with open_store(str(GZIP), True) as tree:
        facts = store_facts(tree)
        assert holds({"stored_key": {"select": {}, "key": "*"}}, facts) is False
        assert holds({"raw_key": "*"}, facts) is False
        assert holds({"document": {"name": ".zattrs", "json": "object"}}, facts) is False


def test_predict_a_noticed_clause_fires_and_a_notice_is_no_failure(tmp_path):
    # hdmf-zarr.dataset.pickle-imports is a notice (never a failure): a rule on it uses `noticed`, fires where the
    # pickles call hdmf_zarr.utils.ZarrReference, and not where they hold plain dicts; the vocabulary never lists it.
    hdmf = Path(__file__).resolve().parents[2] / "conformance-corpus" / "hdmf-zarr" / "zarr-v2"
    calls, plain = hdmf / "reference-dataset-pickle-class.zarr", hdmf / "reference-dataset-pickle.zarr"
    case = "conformance-corpus/hdmf-zarr/zarr-v2/reference-dataset-pickle-class.zarr"
    noticed_rule = {
        "id": "readers.zarr-python.pickle-imports-v2",
        "versions": "<3",
        "formats": ["nwb-zarr"],
        "when": {"noticed": ["hdmf-zarr.dataset.pickle-imports"]},
        "fact": "pickled chunks calling a class from a module a bare environment lacks",
        "outcome": "refused",
        "cases": [case],
    }
    folder, words = one_rule_folder(tmp_path, (calls, plain), ("zarr-python", "2.18.7", "nwb-zarr"), noticed_rule)
    assert "hdmf-zarr.dataset.pickle-imports" not in words["failed"]

    def verdict(path: Path, **options) -> tuple[str, tuple[str, ...]]:
        found = spec_validate.validate(path, readers=True, reader_packs=folder, **options).readers.reader("zarr-python")
        return found.versions[0].verdict, tuple(f.rule for f in found.versions[0].facts)

    assert verdict(calls) == (DOES_NOT_OPEN, ("readers.zarr-python.pickle-imports-v2",))
    assert verdict(plain) == (OPENS, ())
    assert verdict(calls, ignore=["hdmf-zarr.dataset.pickle-imports"])[0] == UNKNOWN  # not evaluated: undecided
