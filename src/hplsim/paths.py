"""Where things live: the C sources next to the package, the build cache, shipped data."""

from __future__ import annotations

import os
from pathlib import Path

from hplsim.errors import HplsimError

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"


def source_root() -> Path:
    """The checkout holding ``csrc/`` (hplsim is installed editable from it)."""
    root = PACKAGE_DIR.parents[1]
    if not (root / "csrc").is_dir():
        raise HplsimError(
            f"C sources not found next to the package ({root / 'csrc'}); "
            "install hplsim from its checkout with ./bootstrap"
        )
    return root


def csrc_dir() -> Path:
    return source_root() / "csrc"


def cache_dir() -> Path:
    """Build cache: ``$HPLSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/hplsim``, else ``~/.cache/hplsim``."""
    env = os.environ.get("HPLSIM_CACHE_DIR")
    if env:
        path = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "hplsim"
    path.mkdir(parents=True, exist_ok=True)
    return path
