"""--baseline / --write-baseline: known findings are reported as baseline and do not fail; new ones do."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest
from corpus_paths import VALID_H5AD
from docs_examples import extends_example

import spec_validate
from spec_validate.cli import main
from spec_validate.engine.loader import builtin_packs
from spec_validate.errors import InputError
from spec_validate.report import baseline as bl

pytestmark = pytest.mark.skipif(not VALID_H5AD.exists(), reason="conformance corpus not generated")


def break_indptr(path: str) -> None:
    with h5py.File(path, "a") as f:
        indptr = f["X/indptr"][...]
        indptr[5] = indptr[6] + 1
        f["X/indptr"][...] = indptr


def test_baseline_write_then_use_on_the_same_file_exits_0(broken_h5ad_here, capsys):
    assert main([broken_h5ad_here]) == 1
    assert main(["--write-baseline", "baseline.json", broken_h5ad_here]) == 0
    doc = json.loads(Path("baseline.json").read_text())
    assert [(e["rule"], e["file"], e["path"]) for e in doc["findings"]] == [
        ("anndata.dataframe.index-attr", "broken.h5ad", "/obs")
    ]
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", broken_h5ad_here]) == 0
    out = capsys.readouterr().out
    assert "  baseline MUST   anndata.dataframe.index-attr broken.h5ad /obs" in out
    assert "0 new failure(s)" in out


def test_baseline_new_violation_fails_and_only_it_is_new(broken_h5ad_here, capsys):
    main(["--write-baseline", "baseline.json", broken_h5ad_here])
    break_indptr(broken_h5ad_here)
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", "--format", "json", broken_h5ad_here]) == 1
    states = json.loads(capsys.readouterr().out)["reports"][0]["baseline"]
    new = [(s["rule"], s["path"]) for s in states if s["state"] == "new"]
    known = [(s["rule"], s["path"]) for s in states if s["state"] == "baseline"]
    assert known == [("anndata.dataframe.index-attr", "/obs")]
    assert len(new) == 1 and new[0][1] == "/X/indptr" and new[0][0].startswith("anndata.csr_matrix.")


def test_baseline_new_node_of_a_known_rule_is_new(broken_h5ad_here, capsys):
    main(["--write-baseline", "baseline.json", broken_h5ad_here])
    with h5py.File(broken_h5ad_here, "a") as f:
        del f["var"].attrs["_index"]
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", broken_h5ad_here]) == 1
    out = capsys.readouterr().out
    assert "  new      MUST   anndata.dataframe.index-attr broken.h5ad /var" in out
    assert "  baseline MUST   anndata.dataframe.index-attr broken.h5ad /obs" in out


def test_baseline_marks_sarif_results(broken_h5ad_here, capsys):
    main(["--write-baseline", "baseline.json", broken_h5ad_here])
    break_indptr(broken_h5ad_here)
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", "--format", "sarif", broken_h5ad_here]) == 1
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert sorted(r["baselineState"] for r in results) == ["new", "unchanged"]


def test_baseline_fingerprint_is_stable_and_ignores_values():
    a = bl.fingerprint("anndata.x.y", "data/a.h5ad", "/X/indptr")
    assert a == bl.fingerprint("anndata.x.y", "data/a.h5ad", "/X/indptr")
    assert a != bl.fingerprint("anndata.x.y", "data/b.h5ad", "/X/indptr")
    assert a != bl.fingerprint("anndata.x.z", "data/a.h5ad", "/X/indptr")


def test_baseline_fingerprint_of_a_builtin_rule_is_the_one_earlier_versions_wrote():
    # sha256 of (rule id, file, node path), as written before packs were part of a result's key.
    assert bl.fingerprint("anndata.x.y", "data/a.h5ad", "/X/indptr") == "3cf1f617d53ae3c07cb91c7cb4b7165a"


def test_baseline_fingerprint_names_the_pack_only_for_rules_a_user_pack_defines():
    builtin = builtin_packs()[0].rules[0]
    assert bl.fingerprint_pack(builtin) is None
    assert bl.fingerprint_pack(builtin._replace(pack="lab-policy")) is None  # inherited by a pack extending anndata
    own = builtin._replace(pack="lab", builtin=False)
    assert bl.fingerprint_pack(own) == "lab"
    prints = {bl.fingerprint(own.id, "a.h5ad", "/", pack) for pack in (None, "lab", "other-lab")}
    assert len(prints) == 3


def test_baseline_written_without_a_user_pack_matches_with_one_extending_anndata(broken_h5ad_here, capsys):
    Path("lab-policy.yaml").write_text(extends_example(), encoding="utf-8")
    main(["--write-baseline", "baseline.json", broken_h5ad_here])
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", "--pack", "lab-policy.yaml", broken_h5ad_here]) == 0
    out = capsys.readouterr().out
    assert "  baseline MUST   anndata.dataframe.index-attr broken.h5ad /obs" in out
    assert "0 new failure(s)" in out


def test_baseline_missing_file_is_exit_2(broken_h5ad_here, capsys):
    assert main(["--baseline", "nope.json", broken_h5ad_here]) == 2
    assert "nope.json: no such baseline file" in capsys.readouterr().err


def test_baseline_load_rejects_other_json(tmp_path):
    (tmp_path / "b.json").write_text('{"results": []}')
    with pytest.raises(InputError, match="not a spec-validate baseline"):
        bl.load(tmp_path / "b.json")


def test_baseline_knows_every_failing_node_not_only_the_listed_ones(broken_h5ad_here, capsys):
    # 25 uns entries fail one rule: the report lists the first 20 findings, the baseline records all 25, and a 26th
    # node that sorts after them is one new failure (it was silently taken as known).
    def add_entries(names):
        with h5py.File(broken_h5ad_here, "a") as f:
            for name in names:
                f["uns"].create_group(name).attrs["encoding-type"] = "dict"

    add_entries([f"e{i:02d}" for i in range(25)])
    assert main(["--write-baseline", "baseline.json", broken_h5ad_here]) == 0
    recorded = [
        e["path"] for e in json.loads(Path("baseline.json").read_text())["findings"] if e["rule"] == "anndata.dict.encoding"
    ]
    assert len(recorded) == 25
    add_entries(["e25"])
    capsys.readouterr()
    assert main(["--baseline", "baseline.json", "--format", "json", broken_h5ad_here]) == 1
    states = json.loads(capsys.readouterr().out)["reports"][0]["baseline"]
    assert [(s["rule"], s["path"]) for s in states if s["state"] == "new" and s["rule"] == "anndata.dict.encoding"] == [
        ("anndata.dict.encoding", "/uns/e25")
    ]


def test_statistics_count_every_failing_node(broken_h5ad_here, capsys):
    with h5py.File(broken_h5ad_here, "a") as f:
        for i in range(25):
            f["uns"].create_group(f"e{i:02d}").attrs["encoding-type"] = "dict"
    capsys.readouterr()
    main(["--statistics", "--format", "json", broken_h5ad_here])
    rows = {r["rule"]: r["count"] for r in json.loads(capsys.readouterr().out)}
    assert rows["anndata.dict.encoding"] == 25


def test_baseline_never_records_a_clause_not_checked():
    # Not checked is no failure: nothing to record, nothing that could be "new".
    from spec_validate.model import Status

    store = Path(__file__).resolve().parents[1] / "conformance-corpus/zarr/zarr-v2/valid-every-element.zarr"
    report = spec_validate.validate(store)
    assert any(r.status is Status.NOT_CHECKED for r in report.results)
    assert list(bl.located(report)) == []
    assert json.loads(bl.dump([report]))["findings"] == []
