"""`hplsim report INPUT… -o report.html`: recognise each input, build its section, write
one page. Every input is read and every figure built before anything is written, so bad
input leaves no file behind."""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import click
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.report.page import Section, render, write_page

SQLITE_MAGIC = b"SQLite format 3\x00"


def _sqlite_format(path: Path) -> str | None:
    """The `format` an hplsim SQLite file declares in its meta table (read-only)."""
    # the side files this read may make: a damaged WAL file's close cannot always remove
    # them (tests/test_faults.py saw an empty -wal left), and a refused file is left as found
    ours = [f for f in (Path(f"{path}-wal"), Path(f"{path}-shm")) if not f.exists()]
    try:
        try:
            # not mode=ro: a read-only connection cannot remove the -wal and -shm files it
            # makes, and would leave them next to the store; query_only keeps it a reader
            row = _meta_format(path.resolve().as_uri())
        except sqlite3.OperationalError as exc:
            if "unable to open" not in str(exc):
                raise
            # a WAL file on a read-only file system: no -shm can be made, nothing can write it
            row = _meta_format(f"{path.resolve().as_uri()}?immutable=1")
    except sqlite3.DatabaseError as exc:
        for f in ours:
            f.unlink(missing_ok=True)
        raise HplsimError(f"{path}: not an hplsim results store or history (unreadable SQLite file: {exc})") from None
    return row[0] if row else None


def _meta_format(uri: str):
    con = sqlite3.connect(uri, uri=True)
    try:
        con.execute("PRAGMA query_only = 1")
        return con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    finally:
        con.close()


def kind_of(path: Path) -> str:
    """'trace', 'validate', 'sweep', 'check', 'model' or 'archive' (a calibration archive),
    from what the file is (not its name)."""
    from hplsim.emulate.trace import META, is_trace_dir
    from hplsim.report.validate_figures import TABLE, is_validate_dir

    if not path.exists():
        raise HplsimError(f"{path}: no such file or directory")
    if path.is_dir():
        if is_trace_dir(path):
            return "trace"
        if is_validate_dir(path):
            return "validate"
        raise HplsimError(f"{path}: a directory with neither {META} (predict --trace) nor {TABLE} (validate)")
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(SQLITE_MAGIC):
        kinds = {"hplsim-results": "sweep", "hplsim-history": "check"}
        fmt = _sqlite_format(path)
        if fmt not in kinds:
            raise HplsimError(f"{path}: not an hplsim results store or history (format {fmt!r})")
        return kinds[fmt]
    if b"hplsim-model" in head:
        return "model"
    if zipfile.is_zipfile(path):
        return "archive"
    if path.suffix == ".csv":
        from hplsim.models.readers import classify

        try:
            header = pd.read_csv(path, nrows=0)
        except (ValueError, OSError) as exc:
            raise HplsimError(f"{path}: unreadable CSV ({exc})") from None
        if classify(header) == "network":
            return "archive"  # MPI measurements, as `hplsim fit --network` reads them
        return "check"  # a history kept as a table (docs/formats/history.md); its reader says if not
    raise HplsimError(f"{path}: not a trace or validate directory, a results store, a history, a model file "
                      "or a calibration archive")


def section_of(path: Path, kind: str, model: Path | None) -> Section:
    if kind == "archive":
        from hplsim.models.modelfile import load_model
        from hplsim.models.readers import read_measurements
        from hplsim.report.calibration_figures import calibration_section
        from hplsim.report.network_figures import network_section

        measured = read_measurements([path])
        if measured.kernels.empty:  # an MPI calibration: its fit needs no model file
            return network_section(measured.network, str(path))
        if model is None:
            raise HplsimError(f"{path}: a calibration archive is shown against a model: give the model file too")
        return calibration_section(load_model(model), measured, str(model), str(path))
    if kind == "trace":
        from hplsim.emulate.trace import read_trace
        from hplsim.report.trace_figures import trace_section

        return trace_section(read_trace(path), str(path))
    if kind == "sweep":
        from hplsim.report.sweep_figures import load_runs, sweep_section

        return sweep_section(load_runs(path), str(path))
    if kind == "check":
        from hplsim.calibrate.history import read_history
        from hplsim.report.check_figures import check_section

        return check_section(read_history(path), str(path))
    if kind == "validate":
        from hplsim.report.validate_figures import load_validation, validate_section

        return validate_section(load_validation(path), str(path))
    from hplsim.models.modelfile import load_model
    from hplsim.report.model_figures import model_section

    return model_section(load_model(path), str(path))


def build_report(inputs: list[Path], output: Path, title: str | None = None) -> list[Section]:
    from hplsim.outputs import check_file

    check_file(output, "the report (-o)")  # before the work, as every writer does
    kinds = [kind_of(Path(p)) for p in inputs]
    model = next((Path(p) for p, k in zip(inputs, kinds) if k == "model"), None)
    sections = [section_of(Path(p), k, model) for p, k in zip(inputs, kinds)]
    # Two inputs of the same kind: keep their anchors apart.
    seen: dict[str, int] = {}
    for s in sections:
        seen[s.key] = seen.get(s.key, 0) + 1
        if seen[s.key] > 1:
            s.key = f"{s.key}-{seen[s.key]}"
    text = render(title or "hplsim report", sections, [str(p) for p in inputs])
    write_page(output, text)
    return sections


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("report.html"), show_default=True,
              help="The HTML file to write (self-contained: open it in any browser, offline).")
@click.option("--title", help="The page's title.")
def report_command(inputs: tuple[Path, ...], output: Path, title: str | None) -> None:
    """One HTML page from any of: a prediction trace (predict --trace DIR), a sweep store
    (results.sqlite), a model file (model.yaml) and its calibration archives (.zip), an MPI
    calibration (archive or CSV: its fit and breakpoints), a calibration history (check), a
    validate directory. A section for each input."""
    sections = build_report(list(inputs), output, title)
    figures = sum(len(s.figures) for s in sections)
    click.echo(f"hplsim: wrote {output} ({len(sections)} sections, {figures} figures, "
               f"{output.stat().st_size / 1e6:.1f} MB)", err=True)
