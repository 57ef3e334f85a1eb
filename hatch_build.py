"""Hatch build hook: the built-in packs, validated once when the wheel is built, ship beside their YAML as JSON.

An installed tool then parses no YAML and runs no schema validation on its first run (a fresh CI runner,
each process of a `--jobs` run): see `spec_validate/engine/pack_cache.py`. The entries are made from the packs,
pack schema and primitives of this very build, so they cannot be stale, and they are never committed.
An editable install ships nothing (its code is the checkout's, which changes under it); instead the hook warms
the user's cache with the built-in packs, validated as a first run would, so the first run after
`pip install -e .` is as fast as later ones. Those entries are fingerprinted against the sources like any
other, so an edit to a pack or a primitive makes them misses, never wrong answers.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ValidatedPacksHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        sys.path.insert(0, self.root)
        from spec_validate.engine import loader

        if not os.path.realpath(loader.__file__).startswith(os.path.realpath(self.root) + os.sep):
            raise RuntimeError(f"the build imported another validator ({loader.__file__}), not this tree's")
        if version == "editable":
            loader.warm_user_cache()
            return
        self._directory = tempfile.mkdtemp(prefix="spec-validate-packs-")
        for relative in loader.write_built_entries(self._directory):
            target = "spec_validate/_rules/" + relative.replace(os.sep, "/")
            build_data["force_include"][os.path.join(self._directory, relative)] = target

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_directory", None):
            shutil.rmtree(self._directory, ignore_errors=True)
