"""`spec-validate ome-conformance PATH`: exactly {"valid": bool, "message": str} on stdout, exit code 0 whenever a
verdict is printed, as the OME-Zarr specification project's conformance harness reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checks.test_ome_zarr_examples import EXAMPLES, SPECS, document

from spec_validate import cli, ome_conformance

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "conformance-corpus"
# 0.4 keeps no version beside `bioformats2raw.layout` or `series`: on its own, such a document declares no version,
# and which version's clauses apply cannot be told (in a store, the images below it declare one).
UNDECLARED = {"0.4/examples/bf2raw/image.json", "0.4/examples/ome/series-2.json"}


def _answer(capsys, *args: str) -> dict:
    assert cli.main(["ome-conformance", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1, "one line"
    answer = json.loads(out)
    assert set(answer) == {"valid", "message"}
    assert isinstance(answer["valid"], bool) and isinstance(answer["message"], str)
    return answer


@pytest.mark.skipif(not SPECS.is_dir(), reason=f"{SPECS} not present")
@pytest.mark.parametrize("example", EXAMPLES, ids=[str(p.relative_to(SPECS)) for p in EXAMPLES])
def test_ome_conformance_passes_the_spec_examples_as_attributes_documents(example, tmp_path, capsys):
    answer = _answer(capsys, str(document(example, tmp_path)))
    if str(example.relative_to(SPECS)) in UNDECLARED:
        assert answer["valid"] is False
        assert answer["message"].startswith("ome-zarr04.legacy (MUST) at /: OME-Zarr metadata that declares no version")
    else:
        assert answer == {"valid": True, "message": "valid"}


def test_ome_conformance_fails_an_attributes_document_with_its_first_failure(tmp_path, capsys):
    doc = {
        "ome": {
            "version": "0.5",
            "multiscales": [
                {
                    "axes": [{"name": "x", "type": "space"}],
                    "datasets": [{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1.0]}]}],
                }
            ],
        }
    }
    path = tmp_path / "one-axis.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    answer = _answer(capsys, str(path))
    assert answer["valid"] is False
    message = answer["message"]
    assert message.startswith("ome-zarr05.multiscales.axes-length (MUST) at /: multiscales[0].axes has 1 item(s)")
    assert "the clause: “The length of" in message
    assert message.endswith("more clauses failing)")


def test_ome_conformance_passes_a_valid_hierarchy(capsys):
    for store in ("zarr-v2/valid-every-element.zarr", "zarr-v3/valid-every-element.zarr"):
        assert _answer(capsys, str(CORPUS / "ome-zarr" / store)) == {"valid": True, "message": "valid"}


def test_ome_conformance_fails_a_hierarchy_whose_arrays_do_not_match(capsys):
    answer = _answer(capsys, str(CORPUS / "ome-zarr" / "zarr-v2" / "dataset-path-missing.zarr"))
    assert answer["valid"] is False
    assert answer["message"].startswith("ome-zarr04.datasets.path-array (MUST) at /A/1/0: ")


def test_ome_conformance_fails_at_should_only_when_asked(capsys):
    store = str(CORPUS / "ome-zarr" / "zarr-v3" / "ome-zarr-py-image.zarr")  # departs at SHOULD only
    assert _answer(capsys, store)["valid"] is True
    answer = _answer(capsys, "--fail-on", "should", store)
    assert answer["valid"] is False
    assert answer["message"].startswith("ome-zarr05.axes.unit (SHOULD) at /: ")


def test_ome_conformance_fails_what_is_no_ome_zarr(capsys, tmp_path):
    answer = _answer(capsys, str(CORPUS / "zarr" / "zarr-v2" / "valid-every-element.zarr"))
    assert answer == {"valid": False, "message": "not OME-Zarr: no OME-Zarr metadata found (no OME-Zarr pack applies)"}
    assert _answer(capsys, str(tmp_path / "absent.json"))["message"].startswith("error: ")
    bad = tmp_path / "bad.json"
    bad.write_text('{"ome": {', encoding="utf-8")
    assert _answer(capsys, str(bad))["message"].startswith("unreadable: /: named as a JSON document, but not valid JSON")


def test_ome_conformance_fails_a_usage_error_with_exit_code_2(capsys):
    with pytest.raises(SystemExit) as exc:
        ome_conformance.main([])
    assert exc.value.code == 2
    assert "spec-validate ome-conformance: error:" in capsys.readouterr().err
