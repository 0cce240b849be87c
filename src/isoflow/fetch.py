"""One way to obtain every external file: cache → mirror → canonical URL, verified, written atomically.

A :class:`Resource` names a file by the relative path it has in a *mirror*
(``<mirror>/<name>``) and in the local cache (``<cache>/<name>``), and knows its
canonical location(s) and, where the file is fixed, its sha256. :func:`fetch`

1. returns the cached copy if it is there and verified;
2. otherwise copies it from the first mirror directory that holds it
   (``mirror=`` argument, else ``$ISOFLOW_MIRROR``; several directories may be
   given, separated by ``:``) — how an air-gapped cluster gets its data;
3. otherwise downloads the canonical URL with pooch (``http(s)``, ``ftp``,
   ``doi``; ``file://`` URLs are copied), extracting ``member`` when the URL is
   an archive;

and in every case checks size and sha256 (when known) and refuses HTML error
pages, before renaming the verified temp file into place. A failed or
interrupted fetch leaves no file under the cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from .atomic import atomic_file
from .errors import DataFormatError

logger = logging.getLogger(__name__)

MIRROR_ENV = "ISOFLOW_MIRROR"


class FetchError(RuntimeError):
    """A resource could not be obtained or did not verify."""


class ChecksumError(FetchError):
    """A file's size, hash or content is not what the resource expects."""


class OfflineError(FetchError):
    """No mirror holds the file and its canonical location cannot be reached."""


@dataclass(frozen=True)
class Resource:
    """An external file the experiment consumes.

    ``name`` is its relative path both in a mirror and in the cache, e.g.
    ``glue/CoLA/train.tsv``. ``urls`` are canonical locations, tried in order;
    when ``member`` is set they point at a zip archive holding the file at that
    path. ``sha256``/``size`` describe the file itself (the member, not the
    archive); ``None`` where the source is not fixed or its hash is not known.
    """

    name: str
    urls: tuple[str, ...]
    sha256: str | None = None
    size: int | None = None
    member: str | None = None
    license: str = ""
    note: str = ""
    # Content check of what the parser needs (header, fields, label set): raises DataFormatError. It runs on every
    # copy before it enters the cache, so an unpinned file that is corrupt or of another version is refused at once.
    check: Callable[[Path], None] | None = field(default=None, compare=False)


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def mirror_dirs(mirror: str | os.PathLike | Sequence[str | os.PathLike] | None = None) -> list[Path]:
    """Mirror directories: the argument if given, else ``$ISOFLOW_MIRROR`` (``:``-separated)."""
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    if mirror is None:
        return []
    if isinstance(mirror, (str, os.PathLike)):
        mirror = [p for p in str(mirror).split(os.pathsep) if p]
    return [Path(m).expanduser() for m in mirror]


def verify(path: Path, res: Resource, *, origin: str) -> None:
    """Raise :class:`ChecksumError` unless ``path`` has the resource's size, content type and hash."""
    actual_size = path.stat().st_size
    if res.size is not None and actual_size != res.size:
        kind = "truncated" if actual_size < res.size else "larger than expected"
        raise ChecksumError(
            f"{res.name} from {origin} is {kind}: {actual_size} bytes, expected {res.size}. "
            "Re-fetch it, or replace the mirror's copy with the original file."
        )
    with open(path, "rb") as fh:
        head = fh.read(512).lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head[:200]:
        raise ChecksumError(
            f"{res.name} from {origin} is an HTML page (an error, login or redirect page?), not the data. "
            "Check the URL in a browser, or put the real file in the mirror."
        )
    if res.sha256 is not None:
        actual = sha256_of(path)
        if actual != res.sha256:
            raise ChecksumError(
                f"{res.name} from {origin} does not match its checksum: expected sha256 {res.sha256}, "
                f"got {actual}. The file is corrupt, truncated or a different version: delete it and "
                "fetch again, or replace the mirror's copy with the original."
            )
    if res.check is not None:
        try:
            res.check(path)
        except DataFormatError as exc:
            # The check saw a temp file; say "line N" instead of its name.
            msg = (
                re.sub(re.escape(str(path)) + r":(\d+):", r"line \1:", str(exc))
                .replace(f"{path}: ", "")
                .replace(str(path), "it")
            )
            raise ChecksumError(
                f"{res.name} from {origin} is not usable: {msg}. Replace that copy with the original file."
            ) from exc


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _is_cached(target: Path, res: Resource) -> bool:
    """A cached file counts when a stamp written at verification still matches its size and mtime."""
    if not target.is_file():
        return False
    stamp = _stamp(target)
    st = target.stat()
    expected = f"{res.sha256} {st.st_size} {st.st_mtime_ns}"
    if stamp.is_file() and stamp.read_text().strip() == expected:
        return True
    try:
        verify(target, res, origin=f"the cache ({target})")
    except ChecksumError as exc:
        logger.warning("discarding cached %s: %s", target, exc)
        target.unlink()
        stamp.unlink(missing_ok=True)
        return False
    stamp.write_text(expected + "\n")
    return True


def _install(target: Path, res: Resource, origin: str, fill: Callable[[Path], None]) -> Path:
    """``fill`` a temp file beside ``target``, verify it, and only then rename it into place (else delete it)."""
    with atomic_file(target) as tmp:
        fill(tmp)
        verify(tmp, res, origin=origin)
    st = target.stat()
    _stamp(target).write_text(f"{res.sha256} {st.st_size} {st.st_mtime_ns}\n")
    return target


def _copy_file_url(url: str, output_file: str, pooch=None) -> None:  # noqa: ARG001 (pooch downloader signature)
    """pooch downloader for ``file://`` URLs: copy the local file."""
    src = Path(unquote(urlparse(url).path))
    if not src.is_file():
        raise FileNotFoundError(f"{src} does not exist")
    shutil.copyfile(src, output_file)


def _download(url: str, downloads: Path, progress: bool) -> Path:
    """Download ``url`` into ``downloads`` with pooch (temp file, then rename); returns the local path."""
    import pooch

    parsed = urlparse(url)
    fname = hashlib.sha256(url.encode()).hexdigest()[:12] + "-" + (Path(unquote(parsed.path)).name or "download")
    if parsed.scheme == "file":
        downloader = _copy_file_url
    elif parsed.scheme in ("http", "https"):
        downloader = pooch.HTTPDownloader(progressbar=progress, timeout=60)
    else:
        downloader = None  # let pooch choose (ftp, sftp, doi)
    logging.getLogger("pooch").setLevel(logging.WARNING)
    return Path(
        pooch.retrieve(url, known_hash=None, fname=fname, path=downloads, downloader=downloader, progressbar=progress)
    )


def _extract_member(archive: Path, member: str, tmp: Path, origin: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            with zf.open(member) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    except KeyError as exc:
        raise FetchError(
            f"{origin} has no member {member!r}; the archive's layout differs from the expected one"
        ) from exc
    except zipfile.BadZipFile as exc:
        archive.unlink(missing_ok=True)  # a corrupt download must not be reused
        raise ChecksumError(f"{origin} is not a valid zip archive ({exc}); it was deleted, fetch again") from exc


def _is_network_error(exc: BaseException) -> bool:
    try:
        import requests

        if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, (ConnectionError, TimeoutError, OSError)) and not isinstance(exc, FileNotFoundError)


def fetch(
    res: Resource,
    cache: str | os.PathLike,
    *,
    mirror: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    allow_download: bool = True,
    progress: bool = True,
) -> Path:
    """Return the local, verified path of ``res`` under ``cache``, fetching it if needed.

    Raises :class:`ChecksumError` when a copy does not verify, and
    :class:`OfflineError` when no mirror holds the file and no canonical URL
    can be reached (or ``allow_download`` is false).
    """
    cache = Path(cache)
    target = cache / res.name
    if _is_cached(target, res):
        return target

    # Directories this call creates are removed again if nothing comes of it (an offline failure leaves no trace).
    made = [d for d in (cache / ".downloads", *(cache / res.name).parents) if not d.exists()]
    try:
        path, rejected = _fetch_uncached(res, cache, target, mirror, allow_download, progress)
    finally:
        for d in sorted(made, key=lambda p: len(p.parts), reverse=True):  # deepest first; only empty ones go
            try:
                d.rmdir()
            except OSError:
                pass
    for exc in rejected:  # a later mirror or the download had a good copy: say which copy was bad
        logger.warning("used another copy because %s", exc)
    return path


def _fetch_uncached(
    res: Resource, cache: Path, target: Path, mirror, allow_download: bool, progress: bool
) -> tuple[Path, list[ChecksumError]]:
    mirrors = mirror_dirs(mirror)
    rejected: list[ChecksumError] = []
    for m in mirrors:
        src = m / res.name
        if src.is_file():
            logger.info("copying %s from mirror %s", res.name, m)
            try:
                return _install(target, res, f"mirror {src}", lambda tmp, src=src: shutil.copyfile(src, tmp)), rejected
            except ChecksumError as exc:  # a bad copy in one mirror: try the next one
                rejected.append(exc)

    looked = ", ".join(str(m / res.name) for m in mirrors) or f"none configured (set ${MIRROR_ENV})"
    if rejected and (not allow_download or not res.urls):
        raise ChecksumError(" | ".join(map(str, rejected)))
    if not allow_download:
        raise OfflineError(
            f"{res.name} is not cached and no mirror holds it (looked in: {looked}); downloads are disabled."
        )
    return _download_and_install(res, target, cache / ".downloads", progress, looked, rejected), rejected


def _download_and_install(
    res: Resource, target: Path, downloads: Path, progress: bool, looked: str, rejected: list[ChecksumError]
) -> Path:
    failures: list[str] = [str(exc) for exc in rejected]
    for url in res.urls:
        try:
            archive = _download(url, downloads, progress)
        except Exception as exc:  # noqa: BLE001 - every failure is reported together below
            failures.append(f"{url}: {type(exc).__name__}: {exc}")
            if not _is_network_error(exc):
                logger.warning("download of %s failed: %s", url, exc)
            continue

        def fill(tmp: Path, archive=archive, url=url) -> None:
            if res.member is not None:
                _extract_member(archive, res.member, tmp, origin=url)
            else:
                shutil.copyfile(archive, tmp)
                archive.unlink()  # the copy under its own name is what we keep

        return _install(target, res, url, fill)
    if rejected:  # the copies we found were bad, and no good one could be downloaded: the bad copy is the news
        raise ChecksumError(
            " | ".join(map(str, rejected)) + f" (a download from the canonical location failed too: "
            f"{'; '.join(failures[len(rejected) :]) or 'no URL known'})"
        )
    offline = (
        "this machine appears to be offline: "
        if failures and all("ConnectionError" in f or "NameResolution" in f for f in failures)
        else ""
    )
    raise OfflineError(
        f"could not fetch {res.name}: {offline}no mirror holds it (looked in: {looked}) and its canonical location "
        f"could not be reached ({'; '.join(failures) or 'no URL known'}). On a machine without internet, "
        f"copy the file to <mirror>/{res.name} and set {MIRROR_ENV}=<mirror> (or `mirror:` in the config)."
    )


__all__ = [
    "Resource",
    "fetch",
    "verify",
    "mirror_dirs",
    "sha256_of",
    "FetchError",
    "ChecksumError",
    "OfflineError",
    "MIRROR_ENV",
]
