"""Telling a URL from a local path, without importing the remote-store machinery (urllib, fsspec)."""

from __future__ import annotations

import re

URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def is_url(path: str) -> bool:
    """True when `path` is a URL (`scheme://...`) rather than a local path."""
    match = URL_SCHEME.match(str(path))
    # A one-letter scheme is a Windows drive (`C://data`), not a protocol.
    return match is not None and len(match.group(1)) > 1
