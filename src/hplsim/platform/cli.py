"""`hplsim platform`: show what a platform spec (or XML) becomes — the SimGrid XML and the
hostfile that `predict` would use."""

from __future__ import annotations

from pathlib import Path

import click

from hplsim.clitypes import RANKS_PER_HOST
from hplsim.outputs import check_dir, write_text
from hplsim.platform.spec import load_platform


@click.command("platform")
@click.argument("spec", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Write platform.xml and hostfile into this folder (default: print a summary).")
@click.option("--ranks-per-host", type=RANKS_PER_HOST, help="Rank slots per host (XML platforms: default its cores).")
def platform(spec: Path, out: Path | None, ranks_per_host: int | None) -> None:
    """Turn a platform spec (YAML, docs/formats/platform.md) into SimGrid XML + hostfile."""
    if out is not None:
        check_dir(out, "the platform files (-o)")
    p = load_platform(spec, ranks_per_host)
    if out is None:
        hosts = p.hosts
        click.echo(f"{p.label}: {len(hosts)} hosts ({hosts[0]} … {hosts[-1]}), {len(p.slots)} rank slots")
        click.echo(f"SMPI options: {p.config or 'none beyond the XML'}")
        click.echo(f"MPI_Iprobe reports: {p.iprobe_reports} messages")
        return
    check_dir(out, "the platform files (-o)")
    for name, text in (("platform.xml", p.xml), ("hostfile", "\n".join(p.slots) + "\n")):
        write_text(out / name, text, f"the {name}")
    click.echo(f"wrote {out / 'platform.xml'} and {out / 'hostfile'} ({len(p.slots)} rank slots)")
    if p.iprobe_reports != "arrived":
        # SimGrid's XML has no place for it: predicting from the XML would use SMPI's probe
        click.echo(f"note: the spec's mpi: iprobe_reports: {p.iprobe_reports} is not in the XML; "
                   "predict from the spec to keep it")
