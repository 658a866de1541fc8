"""HPL 2.0's source: the ``hpl/`` folder of Debian's hpcc source package, fetched with apt
at build time and verified against a pinned checksum. HPL's source is never committed."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.paths import cache_dir

TARBALL = "hpcc_1.5.0.orig.tar.gz"
SHA256 = "0a6fef7ab9f3347e549fed65ebb98234feea9ee18aea0c8f59baefbe3cf7ffb8"
HPL_DIR_IN_TARBALL = "hpcc-1.5.0/hpl"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _candidate_urls() -> list[str]:
    """Where apt says the tarball is: the deb-src index if configured, else the pool folder
    of the binary hpcc package (Debian keeps a source package's files in that folder)."""
    urls = []
    for argv in (["apt-get", "source", "--print-uris", "hpcc"], ["apt-get", "download", "--print-uris", "hpcc"]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for uri in re.findall(r"'([^']+)'", out):
            if uri.endswith(TARBALL):
                urls.append(uri)
            elif argv[1] == "download" and "/pool/" in uri:
                urls.append(uri.rsplit("/", 1)[0] + "/" + TARBALL)
    return list(dict.fromkeys(urls))


def fetch_tarball() -> Path:
    """The verified tarball, downloaded once into the cache."""
    dest = cache_dir() / "sources" / TARBALL
    if dest.exists() and _sha256(dest) == SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    urls = _candidate_urls()
    if not urls:
        raise HplsimError(
            "cannot locate Debian's hpcc source package with apt (is apt configured? run ./bootstrap, "
            f"or put {TARBALL} into {dest.parent})"
        )
    errors = []
    for url in urls:
        tmp = dest.with_suffix(".part")
        try:
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)
        except (urllib.error.URLError, OSError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        digest = _sha256(tmp)
        if digest != SHA256:
            tmp.unlink()
            errors.append(f"{url}: checksum {digest} != expected {SHA256}")
            continue
        tmp.replace(dest)
        return dest
    raise HplsimError(f"could not download a verified {TARBALL}: {'; '.join(errors)}")


def extract_hpl(dest: Path) -> Path:
    """Extract ``hpl/`` from the verified tarball into `dest` (which must not exist)."""
    tarball = fetch_tarball()
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(HPL_DIR_IN_TARBALL + "/")]
            tar.extractall(tmp, members=members, filter="data")
        shutil.move(str(Path(tmp) / HPL_DIR_IN_TARBALL), dest)
    return dest
