"""Reading a CSV table strictly: one `HplsimError` naming the file for anything pandas
cannot read, and a row with more fields than the header is an error, not a silent shift
of the columns (pandas would make the first column the index) or a silent loss."""

from __future__ import annotations

import io
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from hplsim.errors import HplsimError


def read_csv(source: Path | str | bytes, what: str) -> pd.DataFrame:
    """`source`: a path, or the bytes of a CSV (an archive member); `what` names it."""
    data = io.BytesIO(source) if isinstance(source, bytes) else source
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(data, index_col=False)
    except FileNotFoundError:
        raise HplsimError(f"{what}: no such file") from None
    except pd.errors.EmptyDataError:
        raise HplsimError(f"{what}: empty file (no header, no rows)") from None
    except pd.errors.ParserWarning:
        raise HplsimError(f"{what}: a row has more fields than the header") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise HplsimError(f"{what}: not a readable CSV ({first})") from None
