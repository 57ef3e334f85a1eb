"""--format jsonl: JSON Lines, each written and flushed as the run goes, so a run over an archive shows its reports as
they come and a run cut short can be resumed (--resume) from the lines it left.

Every line is one JSON object with a `type`:
- `run`, the first line: the tool and what identifies the run (version, packs, selection, --fail-on, ...): a resumed
  run must match it;
- `report`, one per input as it finishes (in the order inputs finish): the JSON format's report object, plus `input`,
  the input as the search named it (what a resumed run matches);
- `skipped`, one per file a folder search found and skipped (`input`, `path`, `reason`);
- `summary`, the last line: the archive summary over every input (report/archive.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TextIO

from spec_validate.errors import SpecValidateError
from spec_validate.model import Report
from spec_validate.report import archive
from spec_validate.report.formats import output_format
from spec_validate.report.json import report_to_json
from spec_validate.report.options import RenderOptions

RUN, REPORT, SKIPPED, SUMMARY = "run", "report", "skipped", "summary"


class JsonlStream:
    """The lines written to `out` one at a time, each flushed; of each input only its digest is kept (for the
    summary). `done` are the inputs of earlier lines (a resumed run), as (position, digest)."""

    def __init__(self, out: TextIO, options: RenderOptions, done: Sequence[tuple[int, archive.Digest]] = ()) -> None:
        self.out = out
        self.options = options
        self.inputs: list[tuple[int, archive.Digest]] = list(done)

    def start(self, run: Mapping[str, Any]) -> None:
        self._write({"type": RUN, "tool": _tool(self.options), "run": dict(run)})

    def add(self, report: Report, position: int, key: str) -> None:
        if report.skipped is not None:
            self._write({"type": SKIPPED, "input": key, "path": report.name, "reason": report.skipped})
            self.inputs.append((position, archive.skipped(report.name)))
            return
        o = self.options
        line = {"type": REPORT, "input": key, **report_to_json(report, o.fail_on, o.baseline, o.fail_on_unchecked)}
        self._write(line)
        self.inputs.append((position, archive.digest(line)))

    def finish(self) -> None:
        self._write({"type": SUMMARY, "tool": _tool(self.options), "archive": self.summary()})

    def digests(self) -> list[archive.Digest]:
        """Every input's digest so far, in input order."""
        return [d for _, d in sorted(self.inputs, key=lambda item: item[0])]

    def summary(self) -> dict[str, Any]:
        return archive.summarize(self.digests(), self.options.fail_on)

    def _write(self, line: Mapping[str, Any]) -> None:
        # ASCII only: a line is then valid JSON whatever the stream's encoding, names read from a store that no
        # encoding writes (lone surrogates) included, and a reader needs no decoding rules of ours.
        self.out.write(json.dumps(line, ensure_ascii=True, separators=(",", ":")) + "\n")
        self.out.flush()


def _tool(options: RenderOptions) -> dict[str, str]:
    return {"name": "spec-validate", "version": options.tool_version}


def _stream(out: TextIO, options: RenderOptions) -> JsonlStream:
    return JsonlStream(out, options)


@output_format("jsonl", stream=_stream)
def render(reports: Sequence[Report], options: RenderOptions) -> str:
    """JSON Lines, one report per input as each finishes, then the archive summary: for archives and --resume."""
    out = io.StringIO()
    stream = JsonlStream(out, options)
    stream.start({"version": options.tool_version, "fail_on": options.fail_on.value.lower()})
    for position, report in enumerate(reports):
        stream.add(report, position, report.name)
    stream.finish()
    return out.getvalue()


class Record(NamedTuple):
    """An input a jsonl file already holds."""

    key: str  # the input as the search named it
    digest: archive.Digest
    line: int  # its line number, from 1


class Previous(NamedTuple):
    """What a jsonl file left by a run holds: its run line, each input it completed, and how many of its bytes
    to keep (up to the last input's line: a summary, or a line cut short when the run was killed, is dropped)."""

    run: dict[str, Any]
    records: list[Record]
    keep: int


def read(lines: Iterable[bytes], name: str) -> Previous:
    """The run line and the inputs of a jsonl file, read line by line (an open binary file: a run over an archive
    leaves a file too large to hold at once). Only the last line may be cut short (the run was killed while
    writing it): that input is validated again. Anything else that is not a line of this format is a one-line
    error naming `name`."""
    run: dict[str, Any] | None = None
    records: list[Record] = []
    keep = offset = 0
    summary_at = 0  # the line of a summary: the run had finished, and only its summary is dropped
    for number, raw in enumerate(lines, start=1):
        offset += len(raw)
        if not raw.endswith(b"\n"):  # the last line, cut short
            break
        line = _parse(raw)
        kind = line.get("type") if isinstance(line, dict) else None
        if run is None:
            if kind != RUN or not isinstance(line.get("run"), dict):
                raise SpecValidateError(f"{name}: not a spec-validate --format jsonl file (its first line is no run line)")
            run, keep = line["run"], offset
            continue
        if summary_at or kind not in (REPORT, SKIPPED, SUMMARY):
            what = f"follows its summary (line {summary_at})" if summary_at else "is no line of spec-validate --format jsonl"
            raise SpecValidateError(f"{name}: line {number} {what}")
        if kind == SUMMARY:
            summary_at = number
            continue
        try:
            found = archive.digest(line) if kind == REPORT else archive.skipped(line["path"])
            key = line["input"]
        except (KeyError, TypeError, AttributeError, ValueError):
            raise SpecValidateError(f"{name}: line {number} is a {kind} line without what one holds") from None
        if not isinstance(key, str):
            raise SpecValidateError(f"{name}: line {number} names no input")
        records.append(Record(key, found, number))
        keep = offset
    if run is None:
        raise SpecValidateError(f"{name}: not a spec-validate --format jsonl file (no complete first line)")
    return Previous(run, records, keep)


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
