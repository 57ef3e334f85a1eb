"""--format jsonl: a run line, one report line per input (the JSON format's report object and the input's name), a
summary line last; and reading back what a run cut short left (spec_validate/resume.py resumes from it)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from corpus_paths import CASES

import spec_validate
from spec_validate.errors import SpecValidateError
from spec_validate.model import Level, Report
from spec_validate.report import archive, jsonl
from spec_validate.report.formats import get
from spec_validate.report.json import archive_summary, report_to_json
from spec_validate.report.options import RenderOptions

SCHEMA = json.loads((Path(spec_validate.__file__).parent / "report" / "report.schema.json").read_text())
REPORT = jsonschema.Draft202012Validator({"$ref": "#/$defs/report", "$defs": SCHEMA["$defs"]})
ARCHIVE = jsonschema.Draft202012Validator({"$ref": "#/$defs/archive", "$defs": SCHEMA["$defs"]})
VALID = CASES / "h5ad" / "valid-every-element.h5ad"
MUST_FAILS = CASES / "h5ad" / "csr-indptr-decreasing.h5ad"

pytestmark = pytest.mark.skipif(not VALID.exists(), reason="conformance corpus not generated")


@pytest.fixture
def reports(tmp_path) -> list[Report]:
    paths = []
    for name, case in (("a", VALID), ("b", MUST_FAILS), ("c", VALID)):
        shutil.copy(case, tmp_path / f"{name}.h5ad")
        paths.append(str(tmp_path / f"{name}.h5ad"))
    skipped = Report(str(tmp_path / "notes.h5ad"), "", (), "0", (), skipped="not an HDF5 file or a Zarr store")
    return [*(spec_validate.validate(p) for p in paths), skipped]


def test_jsonl_lines_are_run_reports_and_summary(reports):
    options = RenderOptions(fail_on=Level.SHOULD)
    lines = [json.loads(line) for line in spec_validate.render(reports, "jsonl", fail_on="should").splitlines()]
    assert [line["type"] for line in lines] == ["run", "report", "report", "report", "skipped", "summary"]
    assert lines[0]["run"] == {"version": spec_validate.__version__, "fail_on": "should"}
    for report, line in zip(reports[:3], lines[1:4], strict=True):
        assert line["input"] == report.name
        body = {k: v for k, v in line.items() if k not in ("type", "input")}
        assert body == report_to_json(report, Level.SHOULD)  # the JSON format's report object
        REPORT.validate(body)
    assert lines[4] == {"type": "skipped", "input": reports[3].name, "path": reports[3].name, "reason": reports[3].skipped}
    ARCHIVE.validate(lines[-1]["archive"])
    assert lines[-1]["archive"] == archive_summary(reports, options)  # the summary JSON and text give
    assert lines[-1]["archive"]["skipped"] == 1


def test_jsonl_is_ascii_whatever_the_names(tmp_path):
    odd = Report("caf\u00e9-\udce9.h5ad", "hdf5", (), "0", (), error="caf\u00e9-\udce9.h5ad: unreadable")
    text = spec_validate.render([odd], "jsonl")
    assert text.isascii()
    assert json.loads(text.splitlines()[1])["source"] == odd.source


def test_jsonl_stream_writes_and_flushes_each_line_as_it_is_added(reports):
    class Counting(io.StringIO):
        flushes = 0

        def flush(self):
            self.flushes += 1
            super().flush()

    out = Counting()
    stream = get("jsonl").stream(out, RenderOptions())
    stream.start({"version": "x"})
    for k, report in enumerate(reports):
        stream.add(report, k, report.name)
        assert len(out.getvalue().splitlines()) == k + 2 and out.flushes == k + 2
    stream.finish()
    assert json.loads(out.getvalue().splitlines()[-1])["type"] == "summary"


def test_jsonl_stream_sums_up_inputs_in_input_order_whatever_order_they_finish(reports):
    out = io.StringIO()
    stream = jsonl.JsonlStream(out, RenderOptions())
    for k in (2, 0, 3, 1):  # the order a pool of processes may finish them in
        stream.add(reports[k], k, reports[k].name)
    assert stream.summary() == archive_summary(reports, RenderOptions())


def test_jsonl_read_keeps_complete_inputs_and_drops_a_line_cut_short(reports):
    text = spec_validate.render(reports, "jsonl").encode()
    lines = text.splitlines(keepends=True)
    cut = b"".join(lines[:3]) + lines[3][:40]  # killed while writing the third input's line
    previous = jsonl.read(io.BytesIO(cut), "run.jsonl")
    assert previous.run["fail_on"] == "must"
    assert [r.key for r in previous.records] == [reports[0].name, reports[1].name]
    assert [r.line for r in previous.records] == [2, 3]
    assert previous.records[1].digest == archive.digest(json.loads(lines[2]))
    assert previous.keep == len(b"".join(lines[:3]))


def test_jsonl_read_of_a_finished_run_drops_only_its_summary(reports):
    text = spec_validate.render(reports, "jsonl").encode()
    previous = jsonl.read(io.BytesIO(text), "run.jsonl")
    assert [r.key for r in previous.records] == [r.name for r in reports]
    assert previous.records[-1].digest == archive.skipped(reports[3].name)
    assert text[previous.keep :].startswith(b'{"type":"summary"')


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"", "no complete first line", id="empty"),
        pytest.param(b'{"type": "run"', "no complete first line", id="header-cut-short"),
        pytest.param(b"a,b,c\n1,2,3\n", "its first line is no run line", id="csv"),
        pytest.param(b'{"tool": "spec-validate", "findings": []}\n', "its first line is no run line", id="baseline"),
        pytest.param(b'{"type": "run", "run": {}}\nnot json\n{"type": "summary"}\n', "line 2 is no line of", id="middle"),
        pytest.param(
            b'{"type": "run", "run": {}}\n{"type": "report", "input": "a"}\n', "line 2 is a report line without", id="short"
        ),
        pytest.param(
            b'{"type": "run", "run": {}}\n{"type": "summary"}\n{"type": "skipped", "input": "a", "path": "a"}\n',
            "line 3 follows its summary (line 2)",
            id="after-summary",
        ),
    ],
)
def test_jsonl_read_of_what_no_run_wrote_is_a_one_line_error(data, message):
    with pytest.raises(SpecValidateError, match=r"^run\.jsonl: ") as raised:
        jsonl.read(io.BytesIO(data), "run.jsonl")
    assert message in str(raised.value) and "\n" not in str(raised.value)
