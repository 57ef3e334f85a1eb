"""Which proxy the environment names for a URL (spec_validate.storage.http_proxy), as curl and requests read it."""

from __future__ import annotations

import base64

import pytest

from spec_validate.storage.http_proxy import ProxyUnsupported, bypasses, proxy_for


@pytest.mark.parametrize(
    ("environ", "scheme", "expected"),
    [
        ({}, "http", None),
        ({"http_proxy": "http://p:3128"}, "http", ("p", 3128)),
        ({"http_proxy": "http://p:3128"}, "https", None),
        ({"HTTPS_PROXY": "http://q"}, "https", ("q", 80)),
        ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "https", ("lower", 1)),
        ({"all_proxy": "http://all:9"}, "https", ("all", 9)),
        ({"http_proxy": "p:3128"}, "http", ("p", 3128)),  # no scheme: http://, as curl takes it
        ({"HTTP_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}, "http", None),  # httpoxy: a CGI request's header
        ({"http_proxy": "http://p:1", "no_proxy": "*"}, "http", None),
        ({"http_proxy": "http://p:1", "NO_PROXY": "example.org"}, "http", None),
    ],
)
def test_the_proxy_for_a_scheme(environ, scheme, expected):
    proxy = proxy_for(scheme, "example.org", 80, environ)
    assert (None if proxy is None else (proxy.host, proxy.port)) == expected


def test_proxy_credentials_become_a_header_and_are_never_shown():
    proxy = proxy_for("http", "h", 80, {"http_proxy": "http://us%40er:p%3Ass@p:1"})
    assert proxy.authorization == "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert proxy.shown == "http://p:1"


@pytest.mark.parametrize("url", ["socks5://p:1080", "https://p:443", "http://"])
def test_a_proxy_this_client_cannot_use_is_refused(url):
    with pytest.raises(ProxyUnsupported, match="only http:// proxies"):
        proxy_for("http", "h", 80, {"http_proxy": url})


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "expected"),
    [
        ("example.org", "example.org", 80, True),
        ("example.org", "data.example.org", 80, True),
        (".example.org", "data.example.org", 80, True),
        ("*.example.org", "data.example.org", 80, True),
        ("example.org", "badexample.org", 80, False),
        ("example.org:8080", "example.org", 80, False),
        ("example.org:8080", "example.org", 8080, True),
        ("10.0.0.0/8", "10.1.2.3", 80, True),
        ("10.0.0.0/8", "11.1.2.3", 80, False),
        ("127.0.0.1", "127.0.0.1", 80, True),
        ("::1", "::1", 80, True),
        ("[::1]:8080", "[::1]", 8080, True),
        ("10.0.0.0/8", "example.org", 80, False),
        (" , ,other.org", "example.org", 80, False),
        ("*", "anything", 1, True),
    ],
)
def test_no_proxy_entries(no_proxy, host, port, expected):
    assert bypasses(host, port, no_proxy) is expected
