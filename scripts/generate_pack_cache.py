"""Write validator/engine/validated_packs/: the pack-cache entries of the built-in packs, shipped with the tool.

A first run (a fresh CI runner, each process of a `--jobs` run) then parses no YAML and runs no schema
validation for the built-in packs. The entries are named and checked as the user's cache entries are (tool
version, pack schema, primitive sources, exact pack text), so any change to those makes them stale: they
are then ignored at run time, and tests/engine/test_pack_cache.py fails until they are regenerated.

Usage:
    python scripts/generate_pack_cache.py           # (re)write the entries
    python scripts/generate_pack_cache.py --check   # exit 1 if any entry is stale, missing or extra
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python scripts/generate_pack_cache.py"

sys.path.insert(0, str(ROOT))


def entries() -> dict[str, str]:
    """File name -> the entry it should hold, for every built-in pack."""
    from validator.engine import loader, pack_cache

    out: dict[str, str] = {}
    for path in loader.builtin_pack_files():
        with open(path, "rb") as fh:
            raw = fh.read()
        text = pack_cache.entry_text(raw, loader.parse_and_validate(raw, path))
        if text is None:
            raise SystemExit(f"{path}: does not survive JSON unchanged, so it cannot be shipped validated")
        out[pack_cache.entry_name(raw)] = text + "\n"
    return out


def stale(directory: Path | None = None) -> list[str]:
    """Entries that are missing, differ from what would be written, or are left over."""
    from validator.engine import pack_cache

    directory = directory or Path(pack_cache.SHIPPED_DIR)
    wanted = entries()
    present = {p.name for p in directory.glob("*.json")} if directory.is_dir() else set()
    out = [name for name, text in wanted.items() if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
    return sorted(out + sorted(present - set(wanted)))


def write(directory: Path | None = None) -> None:
    from validator.engine import pack_cache

    directory = directory or Path(pack_cache.SHIPPED_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    wanted = entries()
    for old in directory.glob("*.json"):
        if old.name not in wanted:
            old.unlink()
    for name, text in wanted.items():
        (directory / name).write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if any entry is stale, missing or extra")
    args = parser.parse_args()
    os.environ["SPEC_VALIDATE_NO_CACHE"] = "1"  # validate from the YAML, whatever any cache holds
    if args.check:
        bad = stale()
        for name in bad:
            print(f"stale: validator/engine/validated_packs/{name}", file=sys.stderr)
        return 1 if bad else 0
    write()
    print(f"wrote {len(entries())} entries to validator/engine/validated_packs/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
