"""Every file or folder hplsim writes on a user's request goes through here (one rule).

The rule (docs/errors.md):
- A destination's missing parent folders are created, as ``mkdir -p`` would, by every
  command alike.
- The destination is checked *before* the work (`check_file`, `check_dir`): its folder
  can be created and written to, and a file destination is not a folder. A command that
  cannot write its result refuses at once instead of failing after minutes of work.
- Files are written atomically (`atomic`): a temporary file in the same folder, renamed
  into place when complete. A reader sees the old file or the new one, never half of one;
  a failed write leaves nothing behind.
- Finished work is never lost (`write_or_fallback`): if the destination fails anyway
  (disk full, folder removed meanwhile), the file is saved in a fallback place and the
  warning (or, `strict`, the error) says where.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from hplsim.errors import HplsimError, warn


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _probe(folder: Path) -> None:
    """Create and remove a file in `folder`: the only test that also holds for root on a
    read-only file system (os.access says yes to root)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".hplsim-probe-")
    os.close(fd)
    os.unlink(name)


def _writable_folder(folder: Path, fail: str, name: str) -> None:
    """`folder` created if missing and writable, else HplsimError(`fail`: reason); `name`:
    how the reason names the folder."""
    try:
        if folder.exists() and not folder.is_dir():
            raise HplsimError(f"{fail}: {name} is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        _probe(folder)
    except OSError as exc:
        raise HplsimError(f"{fail}: {_reason(exc)}") from None


def check_dir(path: Path | str, what: str) -> Path:
    """A folder that the command will write into: created if missing, and writable."""
    path = Path(path)
    _writable_folder(path, f"cannot write {what} into {path}", "it")
    return path


def check_file(path: Path | str, what: str) -> Path:
    """A file that the command will write: not a folder, its folder created and writable."""
    path = Path(path)
    if path.is_dir():
        raise HplsimError(f"cannot write {what} {path}: it is a folder")
    if path.name in ("", ".", ".."):
        raise HplsimError(f"cannot write {what} {path}: not a file name")
    _writable_folder(path.parent, f"cannot write {what} {path}", str(path.parent))
    return path


@contextmanager
def atomic(path: Path | str, what: str) -> Iterator[Path]:
    """Yields a temporary path next to `path`; renamed onto `path` if the block succeeds,
    removed if it fails."""
    path = check_file(path, what)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise HplsimError(f"cannot write {what} {path}: {_reason(exc)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path | str, text: str, what: str) -> Path:
    with atomic(path, what) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes(path: Path | str, data: bytes, what: str) -> Path:
    with atomic(path, what) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def _json_scalar(obj: Any) -> Any:
    """numpy's scalars (a pandas column's max, an argmax) as the Python numbers they hold:
    `json` knows neither, and a benchmark lost an hour-long run's JSON to an int64."""
    item = getattr(obj, "item", None)
    if callable(item) and type(obj).__module__ == "numpy" and getattr(obj, "ndim", None) == 0:
        return item()
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def write_json(path: Path | str, doc: Any, what: str, indent: int = 2) -> Path:
    return write_text(path, json.dumps(doc, indent=indent, default=_json_scalar) + "\n", what)


def save_figure(fig: Any, path: Path | str, what: str = "plot", **kwargs: Any) -> Path:
    """A matplotlib figure, atomically (its format from `path`'s suffix)."""
    path = Path(path)
    with atomic(path, what) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", **kwargs)
    return path


def fallback_path(path: Path) -> Path:
    """Where a file that cannot be written where asked goes: the current folder, else the
    temporary folder; never over an existing file."""
    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        candidate = folder / path.name
        i = 1
        while candidate.exists():
            candidate = folder / f"{path.stem}.{i}{path.suffix}"
            i += 1
        try:
            check_file(candidate, "fallback")
            return candidate
        except HplsimError:
            continue
    raise HplsimError(f"cannot write {path.name} anywhere (neither here nor in {tempfile.gettempdir()})")


def write_or_fallback(path: Path | str, write: Callable[[Path], Any], what: str, strict: bool = False) -> Path:
    """`write(path)`; if that fails with an OS error, `write(fallback)` and warn where the
    result went. Returns where it was written. `strict`: the command fails instead
    (HplsimError saying where the result went), so that a script does not go on without
    the file where it asked for it."""
    path = Path(path)
    try:
        write(path)
        return path
    except (OSError, HplsimError) as exc:
        reason = _reason(exc) if isinstance(exc, OSError) else str(exc)
        other = fallback_path(path)
        try:
            write(other)
        except OSError as again:
            raise HplsimError(f"cannot write {what} {path} ({reason}), nor {other} ({_reason(again)})") from None
        if strict:
            raise HplsimError(f"cannot write {what} {path} ({reason}): saved it to {other} instead")
        warn(f"could not write {what} to {path} ({reason}): saved it to {other} instead")
        return other
