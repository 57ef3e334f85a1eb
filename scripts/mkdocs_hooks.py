"""mkdocs hooks for the documentation site (mkdocs.yml `hooks:`).

docs/spec-notes.md (notes on the specs and real writers, written under issue #16) joins the navigation when it is
in the docs at build time, beside the rule index; the site builds the same without it.
"""

from __future__ import annotations

from pathlib import Path

SPEC_NOTES = "spec-notes.md"


def on_config(config, **kwargs):
    if not (Path(config["docs_dir"]) / SPEC_NOTES).is_file():
        return config
    for section in config["nav"] or []:
        if isinstance(section, dict) and "Rules" in section:
            section["Rules"].append({"Notes on the specs": SPEC_NOTES})
    return config
