"""The one fetch mechanism: cache → mirror → canonical URL (pooch over a loopback HTTP server, file://)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import os
import socket
import threading
import zipfile
from pathlib import Path

import pytest

from isoflow.fetch import ChecksumError, FetchError, OfflineError, Resource, fetch, mirror_dirs

PAYLOAD = b"col\tlabel\nhello world\t1\n" * 50
SHA = hashlib.sha256(PAYLOAD).hexdigest()


@contextlib.contextmanager
def serve(directory: Path):
    """A real HTTP server on 127.0.0.1 serving ``directory`` (stopped on exit)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/nothing.zip"


def leftovers(cache: Path) -> list[str]:
    """Anything in the cache that is not a verified file, its stamp, or a complete download."""
    return [
        str(p.relative_to(cache))
        for p in cache.rglob("*")
        if p.is_file() and (p.name.endswith(".part") or ".tmp" in p.name)
    ]


def res(**kw) -> Resource:
    return Resource(**{"name": "glue/TOY/train.tsv", "urls": (), "sha256": SHA, "size": len(PAYLOAD), **kw})


@pytest.fixture
def mirror(tmp_path):
    m = tmp_path / "mirror"
    (m / "glue/TOY").mkdir(parents=True)
    (m / "glue/TOY/train.tsv").write_bytes(PAYLOAD)
    return m


def test_mirror_then_cache(tmp_path, mirror):
    cache = tmp_path / "cache"
    p = fetch(res(), cache, mirror=mirror)
    assert p == cache / "glue/TOY/train.tsv" and p.read_bytes() == PAYLOAD
    (mirror / "glue/TOY/train.tsv").unlink()  # the cache now serves it
    assert fetch(res(), cache, mirror=mirror).read_bytes() == PAYLOAD
    assert leftovers(cache) == []


def test_mirror_from_environment_and_search_order(tmp_path, mirror, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("ISOFLOW_MIRROR", f"{empty}{os.pathsep}{mirror}")
    assert mirror_dirs() == [empty, mirror]
    assert fetch(res(), tmp_path / "cache").read_bytes() == PAYLOAD


def test_corrupt_cache_is_replaced(tmp_path, mirror):
    cache = tmp_path / "cache"
    p = fetch(res(), cache, mirror=mirror)
    p.write_bytes(PAYLOAD[:-1] + b"X")  # same size, different content, new mtime
    assert fetch(res(), cache, mirror=mirror).read_bytes() == PAYLOAD


def test_wrong_checksum_refused_and_nothing_left(tmp_path, mirror):
    (mirror / "glue/TOY/train.tsv").write_bytes(PAYLOAD[:-1] + b"X")
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError) as err:
        fetch(res(), cache, mirror=mirror)
    msg = str(err.value)
    assert (
        "glue/TOY/train.tsv" in msg
        and f"expected sha256 {SHA}" in msg
        and "got " in msg
        and "replace the mirror's copy" in msg
    )
    assert not (cache / "glue/TOY/train.tsv").exists() and leftovers(cache) == []


def test_truncated_file_refused(tmp_path, mirror):
    (mirror / "glue/TOY/train.tsv").write_bytes(PAYLOAD[:100])
    with pytest.raises(ChecksumError, match=f"is truncated: 100 bytes, expected {len(PAYLOAD)}"):
        fetch(res(), tmp_path / "cache", mirror=mirror)


def test_html_error_page_refused(tmp_path, mirror):
    (mirror / "glue/TOY/train.tsv").write_text("<!DOCTYPE html><html><body>404 Not Found</body></html>")
    with pytest.raises(ChecksumError, match="is an HTML page"):
        fetch(res(sha256=None, size=None), tmp_path / "cache", mirror=mirror)


def test_offline_without_mirror_says_so(tmp_path):
    with pytest.raises(OfflineError) as err:
        fetch(res(urls=(closed_port_url(),)), tmp_path / "cache", mirror=tmp_path / "nowhere")
    msg = str(err.value)
    assert (
        "this machine appears to be offline" in msg and "nowhere/glue/TOY/train.tsv" in msg and "ISOFLOW_MIRROR" in msg
    )
    with pytest.raises(OfflineError, match="downloads are disabled"):
        fetch(res(urls=("http://example.invalid/x",)), tmp_path / "cache", allow_download=False)
    assert leftovers(tmp_path / "cache") == [] if (tmp_path / "cache").exists() else True


def test_canonical_http_download_with_archive_member(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "TOY.zip", "w") as zf:
        zf.writestr("TOY/train.tsv", PAYLOAD)
        zf.writestr("TOY/dev.tsv", b"other")
    cache = tmp_path / "cache"
    with serve(site) as base:
        p = fetch(res(urls=(closed_port_url(), f"{base}/TOY.zip"), member="TOY/train.tsv"), cache, progress=False)
    assert p.read_bytes() == PAYLOAD and leftovers(cache) == []


def test_canonical_http_checksum_mismatch(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "train.tsv").write_bytes(PAYLOAD.replace(b"hello", b"HELLO"))
    cache = tmp_path / "cache"
    with serve(site) as base, pytest.raises(ChecksumError, match="does not match its checksum"):
        fetch(res(urls=(f"{base}/train.tsv",)), cache, progress=False)
    assert not (cache / "glue/TOY/train.tsv").exists() and leftovers(cache) == []


def test_http_404_and_missing_member(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "TOY.zip", "w") as zf:
        zf.writestr("OTHER/train.tsv", PAYLOAD)
    with serve(site) as base:
        with pytest.raises(OfflineError, match="404"):
            fetch(res(urls=(f"{base}/missing.zip",)), tmp_path / "c1", progress=False)
        with pytest.raises(FetchError, match="has no member 'TOY/train.tsv'"):
            fetch(res(urls=(f"{base}/TOY.zip",), member="TOY/train.tsv"), tmp_path / "c2", progress=False)


def test_file_url(tmp_path):
    src = tmp_path / "train.tsv"
    src.write_bytes(PAYLOAD)
    p = fetch(res(urls=(src.as_uri(),)), tmp_path / "cache", progress=False)
    assert p.read_bytes() == PAYLOAD
