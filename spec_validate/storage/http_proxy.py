"""The proxy the environment names for an HTTP(S) URL, read as curl, requests and aiohttp read it.

`http_proxy` for `http://` URLs, `https_proxy` for `https://` ones (lower case before upper case; `all_proxy`
where neither is set), and `no_proxy` for the hosts that go direct: `*` for all, a host name (or `.domain`, or
`*.domain`) matching the host or any host below it, an IP address or network (`10.0.0.0/8`), each optionally with
a `:port`. In a CGI process (`REQUEST_METHOD` set) `HTTP_PROXY` is not read: a client's `Proxy:` request header
would set it ("httpoxy"), as the standard library's `urllib` also guards against.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


class ProxyUnsupported(Exception):
    """A proxy URL this client cannot use (a scheme other than http://, or no host)."""


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    authorization: str | None  # the Proxy-Authorization header's value, from the proxy URL's user and password
    shown: str  # the proxy's URL without its credentials, for messages


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy for a request to `scheme://host:port`, or None where none is set or `no_proxy` excludes the host.

    Raises:
        ProxyUnsupported: the proxy URL set is not `http://host[:port]`.
    """
    environ = os.environ if environ is None else environ
    url = _proxy_url(scheme, environ)
    if not url or bypasses(host, port, environ.get("no_proxy") or environ.get("NO_PROXY") or ""):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")  # `proxy:3128` is taken as http://, as curl takes it
    shown = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ProxyUnsupported(f"the proxy {shown} cannot be used: only http:// proxies are supported")
    authorization = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(credentials).decode("ascii")
    return Proxy(parts.hostname, parts.port or 80, authorization, shown)


def _proxy_url(scheme: str, environ: Mapping[str, str]) -> str:
    names = [f"{scheme}_proxy"]
    if not (scheme == "http" and "REQUEST_METHOD" in environ):
        names.append(f"{scheme.upper()}_PROXY")
    names += ["all_proxy", "ALL_PROXY"]
    return next((environ[name].strip() for name in names if environ.get(name, "").strip()), "")


def bypasses(host: str, port: int, no_proxy: str) -> bool:
    """True where the `no_proxy` list names the host (and port, where an entry gives one)."""
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if "/" in name or _is_address(name):
            if _in_network(host, name):
                return True
            continue
        name = name.removeprefix("*").lstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """(host part, port or None) of a no_proxy entry: `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address."""
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None


def _is_address(name: str) -> bool:
    return name.replace(".", "").isdigit() or ":" in name


def _in_network(host: str, network: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(network, strict=False)
    except ValueError:  # the host is a name, or the entry no network: no match
        return False
