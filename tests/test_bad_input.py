"""A corpus of bad inputs, one case per line of the table, across every subcommand and
every class of issue 20 (docs/errors.md): each case exits 1 or 2 with exactly one
``hplsim: error:`` line naming the problem, no traceback, no partial or stale file and no
process left behind.

The cases run in this process (hplsim.cli.run, the entry point's error handling without
its signal set-up): a real process is not the point here. Signals are in test_kill.py.
"""

from __future__ import annotations

import io
import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import format_hpl_dat
from helpers import invoke

SMALL = ["-N", "500", "--nb", "64", "-P", "1", "-Q", "2"]
#: a tune that would run (a few seconds) if nothing were wrong
TUNE = ["--preset", "dahu", "--ranks", "2", "--memory-per-node", "64MB", "--budget", "10s", "--jobs", "1"]


@dataclass
class Case:
    id: str
    args: list[str]
    message: str  # a regular expression the error line must match (after "hplsim: error: ")
    code: int | None = None  # 1 or 2; None: either
    absent: list[str] = field(default_factory=list)  # files/folders that must not exist afterwards


# --------------------------------------------------------------------- the input files

def _model(kernels: dict | None = None, **top) -> str:
    doc = {"format": "hplsim-model", "version": 1, "default": {"kernels": kernels if kernels is not None else {
        "dgemm": {"mean": {"mnk": 1e-11}}, "dtrsm": {"mean": {"mnk": 1e-11}}}}, **top}
    return yaml.safe_dump(doc)


def _platform(**changes) -> str:
    doc = {"nodes": 2, "cores_per_node": 2, "network": {"bandwidth": "10GBps", "latency": "1us"}}
    net = changes.pop("network", {})
    doc.update(changes)
    doc["network"] = {**doc["network"], **net}
    return yaml.safe_dump(doc)


def _xml(cluster_attrs: str) -> str:
    return ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1"><zone id="w" routing="Full">'
            f'<cluster id="c" prefix="n" suffix="" speed="1Gf" {cluster_attrs}/></zone></platform>\n')


def _hpl_dat(**changes) -> str:
    text = format_hpl_dat(HplParams.from_config(HplConfig(n=1000, nb=64, p=1, q=2)))
    lines = text.splitlines()
    for index, value in changes.items():
        i = int(index.lstrip("l"))
        lines[i] = value
    return "\n".join(lines) + "\n"


def _archive(metadata: str | None = "kind: dgemm\nstatus: complete\n", members: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        if metadata is not None:
            zf.writestr("metadata.yaml", metadata)
        for name, data in (members or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


DGEMM_CSV = "function,m,n,k,duration,host,cpu\n" + "".join(
    f"dgemm,{64 * i},{64 * i},64,{1e-11 * 64 ** 3 * i * i + 1e-6},h,0\n" for i in range(1, 13))
HISTORY = "host,cpu,run_id,start_time,intercept,mnk,avg_gflops\n" + "".join(
    f"h,0,{i},{1574848720 + 86400 * i},{2e-6 + i * 1e-9},{7.9e-11 + i * 1e-14},{25 + 0.01 * i}\n" for i in range(8))

FILES: dict[str, str | bytes] = {
    "afile": "a regular file: a folder cannot be made under it\n",
    "good_model.yaml": _model(),
    "empty_kernels.yaml": _model({}),
    "no_dgemm.yaml": _model({"dtrsm": {"mean": {"mnk": 1e-11}}}),
    "neg_leading.yaml": _model({"dgemm": {"mean": {"mnk": -1e-11}}}),
    "neg_intercept.yaml": _model({"dgemm": {"mean": {"intercept": -1e-6, "mnk": 1e-11}}}),
    "negative_dgemm.yaml": _model({"dgemm": {"mean": {"mnk": 1e-11, "mn": -1e-6}}, "dtrsm": {"mean": {"mnk": 1e-11}}}),
    "huge_intercept.yaml": _model({"dgemm": {"mean": {"intercept": 1e300, "mnk": 1e-11}}}),
    "nan_coef.yaml": _model({"dgemm": {"mean": {"mnk": float("nan")}}}),
    "unknown_kernel.yaml": _model({"dgemm": {"mean": {"mnk": 1e-11}}, "zgemm": {"mean": {"mnk": 1}}}),
    "unknown_term.yaml": _model({"dgemm": {"mean": {"mnq": 1e-11}}}),
    "bad_family.yaml": _model({"dgemm": {"mean": {"mnk": 1e-11}, "noise": {"family": "cauchy"}}}),
    "bad_weights.yaml": _model({"dgemm": {"mean": {"mnk": 1e-11}, "noise": {"family": "mixture", "components": [
        {"weight": 0.3, "sigma": {"mnk": 1e-12}}]}}}),
    "bad_condition.yaml": _model({"dgemm": {"mean": {"mnk": 1e-11}, "pieces": [{"when": "n >> m", "mean": {}}]}}),
    "wrong_format.yaml": yaml.safe_dump({"format": "other", "version": 1}),
    "wrong_version.yaml": yaml.safe_dump({"format": "hplsim-model", "version": 9, "default": {}}),
    "no_entry.yaml": yaml.safe_dump({"format": "hplsim-model", "version": 1}),
    "not_yaml.yaml": "default: [unclosed\n",
    "list_top.yaml": "- 1\n- 2\n",
    "bare_bw.yaml": _platform(network={"bandwidth": 10}),
    "bw0.yaml": _platform(network={"bandwidth": "0GBps"}),
    "neg_lat.yaml": _platform(network={"latency": "-1us"}),
    "bad_unit.yaml": _platform(network={"bandwidth": "3 furlongs"}),
    "inf_bw.yaml": _platform(network={"bandwidth": "1e400GBps"}),
    "nodes0.yaml": _platform(nodes=0),
    "nodes_text.yaml": _platform(nodes="many"),
    "no_nodes.yaml": yaml.safe_dump({"network": {"bandwidth": "10GBps"}}),
    "fat_mismatch.yaml": _platform(nodes=4, network={"topology": "fat-tree", "fat_tree": "2;4,4;1,2;1,2"}),
    "fat_syntax.yaml": _platform(nodes=4, network={"topology": "fat-tree", "fat_tree": "2;4;1,2"}),
    "fat_missing.yaml": _platform(network={"topology": "fat-tree"}),
    "ring.yaml": _platform(network={"topology": "ring"}),
    "bad_policy.yaml": _platform(network={"sharing_policy": "SOMETIMES"}),
    "bad_placement.yaml": _platform(placement="random"),
    "unknown_field.yaml": _platform(gpus=4),
    "bad_piecewise.yaml": _platform(smpi={"smpi/os": "0:1"}),
    "bad_iprobe.yaml": _platform(mpi={"iprobe_reports": "sometimes"}),
    "lb0.yaml": _platform(network={"loopback_bandwidth": "0Bps"}),
    "bw0.xml": _xml('radical="0-1" bw="0GBps" lat="1us"'),
    "negbw.xml": _xml('radical="0-1" bw="-5GBps" lat="1us"'),
    "neglat.xml": _xml('radical="0-1" bw="1GBps" lat="-1us"'),
    "badcore.xml": _xml('radical="0-1" bw="1GBps" lat="1us" core="two"'),
    "badradical.xml": _xml('radical="a-b" bw="1GBps" lat="1us"'),
    "hugeradical.xml": _xml('radical="0-99999999999" bw="1GBps" lat="1us"'),
    "fattree.xml": _xml('radical="0-3" bw="1GBps" lat="1us" topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"'),
    "nohost.xml": '<?xml version="1.0"?><platform version="4.1"><zone id="w" routing="Full"/></platform>\n',
    "broken.xml": "<platform><zone>\n",
    "nb0.dat": _hpl_dat(l7="0            NBs"),
    "n_text.dat": _hpl_dat(l5="many         Ns"),
    "n_neg.dat": _hpl_dat(l5="-5           Ns"),
    "p0.dat": _hpl_dat(l11="0            Ps"),
    "short.dat": "HPLinpack benchmark input file\n",
    "empty.dat": "",
    "binary.yaml": b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x01",
    "bcast9.dat": _hpl_dat(l23="9            BCASTs"),
    "good.dat": _hpl_dat(),
    "spec_empty.yaml": "",
    "spec_unknown.yaml": "hpl: {n: 2000}\ncolour: blue\n",
    "spec_nb0.yaml": "hpl: {n: 2000, nb: 0}\n",
    "spec_badrange.yaml": "hpl: {n: {from: 3000, to: 1000, step: 500}}\n",
    "spec_seed_neg.yaml": "hpl: {n: 2000}\nseeds: [-1]\n",
    "spec_seed_big.yaml": "hpl: {n: 2000}\nseeds: [18446744073709551616]\n",
    "spec_factor_neg.yaml": "hpl: {n: 2000}\nplatform: {variations: [{bandwidth: -1}]}\n",
    "spec_fat.yaml": "hpl: {n: 2000}\nplatform: {variations: [{topology: fat-tree, fat_tree: '2;4,4;1,2;1,2'}]}\n",
    "spec_grid.yaml": "hpl: {n: 2000, grids: [[0, 2]]}\n",
    "spec_timeout.yaml": "hpl: {n: 2000}\ntimeout: -3\n",
    "spec_not_yaml.yaml": "hpl: {n: [2000\n",
    "spec_speed.yaml": "hpl: {n: 2000}\nmodel: {variations: [{speed: 0}]}\n",
    "spec_missing_platform.yaml": "hpl: {n: 2000}\nplatform: nowhere.yaml\n",
    "dgemm.csv": DGEMM_CSV,
    "empty.csv": "",
    "header_only.csv": "function,m,n,k,duration\n",
    "nan.csv": "function,m,n,k,duration\ndgemm,10,10,10,nan\n",
    "negative.csv": "function,m,n,k,duration\ndgemm,10,10,10,-1\n",
    "wide.csv": "function,m,n,k,duration\ndgemm,10,10,10,1e-6,extra\n",
    "nokind.csv": "a,b,c\n1,2,3\n",
    "mpi_one_size.csv": "operation,size,duration\n" + "send,10,1e-6\n" * 5,
    "mpi_tiny.csv": "operation,size,duration\n" + "".join(f"send,{s},{1e-6 + s * 1e-10}\n" for s in (8, 16) * 10),
    "not_zip.zip": b"PK\x03\x04 this is no zip",
    "no_meta.zip": _archive(None, {"results/dgemm.csv": DGEMM_CSV}),
    "bad_meta.zip": _archive("kind: [unclosed\n"),
    "bad_member.zip": _archive(members={"results/dgemm.csv": "m,n\n1,2,3,4\n"}),
    "history.csv": HISTORY,
    "history_dup_conflict.csv": HISTORY + "h,0,1,1574935120,9e-6,1e-10,30\n",
    "history_nocols.csv": "a,b\n1,2\n",
    "history_badcpu.csv": "host,cpu,run_id,start_time,mnk\nh,x,1,1,1e-11\n",
    "history_empty.csv": "",
    "changelog_bad.csv": "date,host,reason\nyesterday,h,x\n",
    "outliers_bad.csv": "cpu,reason\n0,x\n",
}


def _write_files(folder: Path) -> None:
    for name, content in FILES.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


# -------------------------------------------------------------------------- the cases

def _cases() -> list[Case]:
    c: list[Case] = []
    add = c.append

    # 1. output destinations: refused before the work, nothing written
    for cmd, args, what in [
        ("predict", [*SMALL, "-o", "afile/x.json"], r"cannot write the results \(-o\) afile/x\.json: afile is a file"),
        ("predict", [*SMALL, "-o", "."], r"cannot write the results \(-o\) \.: it is a folder"),
        ("predict", [*SMALL, "--keep", "afile/k"], r"cannot write the run folders \(--keep\) into afile/k"),
        ("predict", [*SMALL, "--keep", "afile"], r"cannot write the run folders \(--keep\) into afile: it is a file"),
        ("predict", [*SMALL, "-o", "/proc/hplsim-x/y.json"], r"cannot write the results \(-o\) /proc/hplsim-x/y\.json"),
        ("fit", ["dgemm.csv", "-o", "afile/m.yaml"], r"cannot write the output \(-o\) afile/m\.yaml"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--report", "afile/r"], r"cannot write the report \(--report\) into afile/r"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--report", "afile"], r"into afile: it is a file"),
        ("fit", ["mpi_tiny.csv", "-o", "afile/n.yaml"], r"cannot write the output \(-o\) afile/n\.yaml"),
        ("fit", ["dgemm.csv", "-o", "/proc/x/m.yaml"], r"cannot write the output \(-o\) /proc/x/m\.yaml"),
        ("platform", ["good_model.yaml", "-o", "afile/p"], r"cannot write the platform files \(-o\) into afile/p"),
        ("platform", ["bare_bw.yaml", "-o", "afile"], r"cannot write the platform files \(-o\) into afile: it is a file"),
        ("calibrate", ["dgemm", "--rows", "2", "--max-side", "64", "--max-product", "1000", "--out", "afile/c.zip"],
         r"cannot write the calibration archive \(--out\) afile/c\.zip"),
        ("calibrate", ["dtrsm", "--rows", "2", "--max-side", "64", "--max-product", "1000", "--out", "afile/c.zip"],
         r"cannot write the calibration archive \(--out\) afile/c\.zip"),
        ("calibrate", ["mpi", "--rows", "2", "--max-size", "64", "--out", "afile/m.zip"],
         r"cannot write the calibration archive \(--out\) afile/m\.zip"),
        ("calibrate", ["dgemm", "--rows", "2", "--max-side", "64", "--max-product", "1000", "--out", "/proc/c.zip"],
         r"cannot write the calibration archive \(--out\) /proc/c\.zip"),
        ("run-real", [*SMALL, "-o", "afile/r.zip"], r"cannot write the run archive \(--out\) afile/r\.zip"),
        ("validate", [*SMALL, "--out", "afile/v"], r"cannot write the validation \(--out\) into afile/v"),
        ("validate", [*SMALL, "--out", "afile"], r"afile.* is a file"),
        ("sweep", ["spec_nb0.yaml"], r"nb"),
        ("sweep", ["good.dat", "--db", "afile/r.sqlite"], r"cannot write the results store \(--db\) afile/r\.sqlite"),
        ("tune", [*TUNE, "-o", "afile/HPL.dat"], r"cannot write the HPL\.dat \(-o\) afile/HPL\.dat"),
        ("tune", [*TUNE, "--db", "afile/t.sqlite"], r"cannot write the results store \(--db\) afile/t\.sqlite"),
        ("check", ["history.csv", "--plot", "afile/c"], r"cannot write the charts \(--plot\) into afile/c"),
        ("check", ["history.csv", "--plot", "afile"], r"afile.* is a file"),
    ]:
        add(Case(f"dest-{cmd}-{len(c)}", [cmd, *args], what, absent=["afile/x.json", "m.yaml", "afile/p"]))

    # 2. silently wrong results: refused, with the reason
    for model, what in [
        ("empty_kernels.yaml", r"no dgemm law for .*every dgemm call would cost 0 s"),
        ("no_dgemm.yaml", r"no dgemm law"),
        ("neg_leading.yaml", r"neg_leading\.yaml: default\.kernels\.dgemm\.mean\.mnk: expected a coefficient >= 0 .*, got -1e-11"),
        ("neg_intercept.yaml", r"mean\.intercept: expected a coefficient >= 0 .*, got -1e-06"),
        ("huge_intercept.yaml", r"mean\.intercept: expected a plausible coefficient, at most 1e\+06 s .*, got 1e\+300 s"),
        ("negative_dgemm.yaml", r"every dgemm call's modelled duration is <= 0 s"),
        ("nan_coef.yaml", r"mean\.mnk: expected a finite number, got nan"),
        ("unknown_kernel.yaml", r"default\.kernels\.zgemm: expected a kernel among .*, got unknown kernel 'zgemm'"),
        ("unknown_term.yaml", r"mean\.mnq: expected a term of dgemm's sizes m, n, k .*, got unknown size variable 'q'"),
        ("bad_family.yaml", r"noise\.family: expected one of none, normal, halfnormal, mixture, got 'cauchy'"),
        ("bad_weights.yaml", r"noise\.components: expected weights that sum to 1, got weights sum to 0\.3"),
        ("bad_condition.yaml", r"pieces\[0\]\.when: expected a condition on the sizes .*, got condition 'n >> m'"),
        ("wrong_format.yaml", r"wrong_format\.yaml: format: expected 'hplsim-model', got 'other'"),
        ("wrong_version.yaml", r"version: expected 1 \(the version this hplsim reads\), got 9"),
        ("no_entry.yaml", r"neither a 'default' entry nor any host"),
        ("not_yaml.yaml", r"not valid YAML/JSON at line"),
        ("list_top.yaml", r"list_top\.yaml: expected a mapping at the top level, got list"),
        ("missing.yaml", r"cannot read model file missing\.yaml"),
    ]:
        add(Case(f"model-{model}", ["predict", *SMALL, "--model", model, "-o", "out.json"], what, absent=["out.json"]))
    for model in ("no_entry.yaml", "huge_intercept.yaml", "not_yaml.yaml"):
        add(Case(f"fit-base-{model}", ["fit", "dgemm.csv", "--base", model, "-o", "m.yaml"],
                 r"model|no dgemm|plausible|YAML", absent=["m.yaml"]))

    # 2-3. platform specs and XML: named problems, before SimGrid sees them
    for spec, what in [
        ("bare_bw.yaml", r"bare_bw\.yaml: network\.bandwidth: expected a bandwidth with its unit, .*got 10, which has no unit"),
        ("bw0.yaml", r"network\.bandwidth: expected a positive bandwidth, got '0GBps'"),
        ("neg_lat.yaml", r"network\.latency: expected a time that is not negative, got '-1us'"),
        ("bad_unit.yaml", r"network\.bandwidth: expected a unit among .*, got unknown unit 'furlongs'"),
        ("inf_bw.yaml", r"network\.bandwidth: expected a finite bandwidth"),
        ("nodes0.yaml", r"nodes0\.yaml: nodes: expected a positive integer, got 0"),
        ("nodes_text.yaml", r"nodes: expected a positive integer, got 'many'"),
        ("no_nodes.yaml", r"nodes: expected a positive integer \(the field is required\), got nothing"),
        ("fat_mismatch.yaml", r"network\.fat_tree: expected .* 4 nodes, got '2;4,4;1,2;1,2', which has 16 leaves"),
        ("fat_syntax.yaml", r"is not SimGrid's \"levels;down"),
        ("fat_missing.yaml", r"network\.fat_tree: expected .*a fat-tree needs 'fat_tree'"),
        ("ring.yaml", r"network\.topology: expected one of star, fat-tree, fat-tree-star, got 'ring'"),
        ("bad_policy.yaml", r"network\.sharing_policy: expected one of SHARED"),
        ("bad_placement.yaml", r"placement: expected one of block, cyclic, got 'random'"),
        ("unknown_field.yaml", r"expected only the fields .*, got unknown field\(s\) gpus"),
        ("bad_piecewise.yaml", r"smpi\.smpi/os: expected a ';'-separated list of size:offset:per_byte, got '0:1'"),
        ("bad_iprobe.yaml", r"mpi\.iprobe_reports: expected one of arrived, progressed, progressed-between-nodes"),
        ("lb0.yaml", r"network\.loopback_bandwidth: expected a positive bandwidth"),
        ("bw0.xml", r"<cluster id='c'> bw='0GBps': a bandwidth must be positive"),
        ("negbw.xml", r"negbw\.xml: <cluster id='c'> bw: expected a bandwidth that is not negative, got '-5GBps'"),
        ("neglat.xml", r"neglat\.xml: <cluster id='c'> lat: expected a time that is not negative"),
        ("badcore.xml", r"core='two' is not a positive integer"),
        ("badradical.xml", r"radical 'a-b'"),
        ("hugeradical.xml", r"range '0-99999999999' is empty or too large"),
        ("nohost.xml", r"no host found"),
        ("fattree.xml", r"its fat-tree has 16 leaves .* its radical names 4 hosts"),
        ("broken.xml", r"not valid XML"),
        ("missing.yaml", r"cannot read platform file missing\.yaml"),
    ]:
        add(Case(f"platform-{spec}", ["platform", spec, "-o", "pout"], what, absent=["pout/platform.xml"]))
        add(Case(f"predict-platform-{spec}", ["predict", *SMALL, "--platform", spec, "-o", "out.json"], what,
                 absent=["out.json"]))
    for spec in ("bare_bw.yaml", "neg_lat.yaml", "fat_mismatch.yaml"):
        add(Case(f"fit-platform-{spec}", ["fit", "mpi_tiny.csv", "--network", "--platform", spec, "-o", "n.yaml"],
                 r"bandwidth|latency|fat_tree", absent=["n.yaml"]))

    # 2-3. command-line values: named, never wrapped or ignored
    for cmd, args, what in [
        ("predict", [*SMALL, "--seed", str(2**64)], r"Invalid value for '--seed': 18446744073709551616 is not in the range"),
        ("predict", [*SMALL, "--seed", "-1"], r"Invalid value for '--seed'"),
        ("predict", [*SMALL, "--ranks-per-host", "0"], r"Invalid value for '--ranks-per-host': 0"),
        ("predict", [*SMALL, "--ranks-per-host", "-1"], r"Invalid value for '--ranks-per-host': -1"),
        ("predict", [*SMALL, "--timeout", "0"], r"Invalid value for '--timeout': 0\.0"),
        ("predict", [*SMALL, "--timeout", "-5"], r"Invalid value for '--timeout'"),
        ("predict", [*SMALL, "--timeout", "nan"], r"Invalid value for '--timeout'"),
        ("predict", ["-N", "10000000000000000000000", "--nb", "64", "-P", "1", "-Q", "2"],
         r"beyond what memory folding can serve on any Linux machine"),
        ("predict", ["-N", "100000000", "--nb", "64", "-P", "1", "-Q", "2"], r"memory folding|vm.max_map_count"),
        ("predict", ["-N", "500", "--nb", "64", "-P", "64", "-Q", "64"], r"ranks, but the platform .* rank slots"),
        ("predict", ["-N", "-5", "--nb", "64", "-P", "1", "-Q", "2"], r"N|-5"),
        ("predict", ["-N", "500", "--nb", "0", "-P", "1", "-Q", "2"], r"NB|nb"),
        ("predict", ["-N", "500", "--nb", "64", "-P", "0", "-Q", "2"], r"P|0"),
        ("predict", ["-N", "abc"], r"abc"),
        ("predict", [*SMALL, "--bcast", "9"], r"BCAST|bcast|9"),
        ("predict", [*SMALL, "--preset", "nowhere"], r"'nowhere' is not"),
        ("predict", ["--preset", "dahu"], r"--preset dahu needs the problem size -N"),
        ("predict", ["--hpl-dat", "missing.dat"], r"missing\.dat"),
        ("predict", [*SMALL, "--bogus"], r"No such option '--bogus'"),
        ("run-real", [*SMALL, "--seed", str(2**64)], r"Invalid value for '--seed'"),
        ("run-real", [*SMALL, "--timeout", "0"], r"Invalid value for '--timeout'"),
        ("run-real", ["-N", "500", "--nb", "64", "-P", "64", "-Q", "64"], r"rank|core|slot"),
        ("run-real", [*SMALL, "--trace"], r"--trace needs --out"),
        ("validate", [*SMALL, "--seed", "-3"], r"Invalid value for '--seed'"),
        ("validate", [*SMALL, "--timeout", "0"], r"Invalid value for '--timeout'"),
        ("validate", [*SMALL, "--model", "missing.yaml"], r"--model missing\.yaml: no such file"),
        ("calibrate", ["dgemm", "--seed", str(2**64)], r"Invalid value for '--seed'"),
        ("calibrate", ["dgemm", "--seed", "-1"], r"Invalid value for '--seed'"),
        ("calibrate", ["dgemm", "--rows", "0"], r"--rows must be >= 1"),
        ("calibrate", ["dgemm", "--anchors", "1,2"], r"--anchors: cannot read '1,2'"),
        ("calibrate", ["dgemm", "--mask-bits", "99", "--init", "masked", "--rows", "2", "--max-side", "64",
                       "--max-product", "1000"], r"--mask-bits must be in 0\.\.52"),
        ("calibrate", ["dgemm", "--max-side", "64"], r"max product .* is above max side"),
        ("calibrate", ["dgemm", "--cores", "x-y"], r"cores|x-y"),
        ("calibrate", ["mpi", "--max-size", "1.5"], r"--max-size must be a whole number of bytes"),
        ("calibrate", ["dgemm", "--experiment", "missing.csv"], r"missing\.csv"),
        ("calibrate", ["nothing"], r"No such command 'nothing'"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--seed", str(2**32)], r"Invalid value for '--seed'"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--option", "M9,N9"], r"option|M9"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--kernel", "zgemm"], r"zgemm"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--piece", "dgemm n > m"], r"--piece 'dgemm n > m': expected KERNEL"),
        ("fit", ["dgemm.csv", "-o", "m.yaml", "--network"], r"--network: no MPI measurements in the data"),
        ("fit", ["mpi_tiny.csv", "-o", "n.yaml", "--bandwidth", "10"], r"--bandwidth: expected a bandwidth with its unit, .*got '10', which has no unit"),
        ("fit", ["mpi_tiny.csv", "-o", "n.yaml", "--latency", "-1us"], r"--latency: expected a time that is not negative, got '-1us'"),
        ("fit", ["mpi_tiny.csv", "-o", "n.yaml", "--links", "0"], r"--links must be at least 1"),
        ("fit", ["mpi_tiny.csv", "-o", "n.yaml", "--bandwidth", "0GBps"], r"--bandwidth must be positive"),
        ("fit", ["empty.csv", "-o", "m.yaml"], r"empty"),
        ("fit", ["header_only.csv", "-o", "m.yaml"], r"no measurements"),
        ("fit", ["nan.csv", "-o", "m.yaml"], r"NaN, infinite or negative"),
        ("fit", ["negative.csv", "-o", "m.yaml"], r"NaN, infinite or negative"),
        ("fit", ["wide.csv", "-o", "m.yaml"], r"a row has more fields than the header"),
        ("fit", ["nokind.csv", "-o", "m.yaml"], r"nokind\.csv"),
        ("fit", ["missing.csv", "-o", "m.yaml"], r"missing\.csv: no such file"),
        ("fit", ["not_zip.zip", "-o", "m.yaml"], r"not_zip\.zip"),
        ("fit", ["bad_member.zip", "-o", "m.yaml"], r"bad_member\.zip"),
        ("platform", ["bw0.xml", "--ranks-per-host", "0"], r"Invalid value for '--ranks-per-host'"),
        ("sweep", ["good.dat", "--ranks-per-host", "0"], r"Invalid value for '--ranks-per-host'"),
        ("sweep", ["good.dat", "--timeout", "0"], r"Invalid value for '--timeout'"),
        ("sweep", ["good.dat", "--seeds", "-1"], r"--seeds must be in 0 \.\. 2\*\*64-1"),
        ("sweep", ["good.dat", "--seeds", str(2**64)], r"--seeds must be in 0 \.\. 2\*\*64-1"),
        ("sweep", ["good.dat", "--jobs", "0"], r"--jobs must be at least 1"),
        ("sweep", ["good.dat", "--executor", "carrier-pigeon"], r"carrier-pigeon"),
        ("sweep", ["good.dat", "--slurm-option", "novalue", "--executor", "slurm"], r"slurm|novalue"),
        ("check", ["history.csv", "--window", "0"], r"window"),
        ("check", ["history.csv", "--gamma", "2"], r"gamma|γ"),
        ("check", ["history.csv", "--metrics", " , "], r"--metrics is empty"),
        ("check", ["history.csv", "--metrics", "nonsense"], r"nonsense"),
        ("check", ["history.csv", "--since", "yesterday"], r"--since: 'yesterday' is neither a date"),
        ("check", ["history.csv", "--since", "2020-01-02", "--until", "2020-01-01"], r"--until is before --since"),
        ("check", ["history.csv", "--changelog", "changelog_bad.csv"], r"changelog"),
        ("check", ["history.csv", "--outliers", "outliers_bad.csv"], r"outlier"),
        ("build", ["--only", "everything"], r"'everything' is not one of"),
        ("predict", [*SMALL, "--replicates", "0"], r"Invalid value for '--replicates'"),
        ("tune", [*TUNE, "--budget", "0"], r"--budget '0': the budget of simulation time must be positive"),
        ("tune", [*TUNE, "--memory-per-node", "100kB"], r"smaller than one 64x64 block per rank"),
        ("tune", [*TUNE, "-P", "3", "-Q", "3"], r"process grid 3x3 has 9 ranks, not the 2 to use"),
        ("tune", [*TUNE, "--pfact", "3"], r"--pfact 3 is not one of HPL's codes"),
        ("tune", [*TUNE, "--memory-fraction", "1.5"], r"Invalid value for '--memory-fraction'"),
    ]:
        add(Case(f"value-{cmd}-{len(c)}", [cmd, *args], what))

    # readers: HPL.dat, sweep specs, archives, histories
    for dat, what in [
        ("nb0.dat", r"NB|nb"), ("n_text.dat", r"line 6|Ns|many"), ("n_neg.dat", r"N|-5"),
        ("p0.dat", r"P|Ps|0"), ("short.dat", r"short\.dat"), ("empty.dat", r"empty\.dat"),
        ("bcast9.dat", r"BCAST|9"), ("missing.dat", r"missing\.dat"),
    ]:
        add(Case(f"hpldat-predict-{dat}", ["predict", "--hpl-dat", dat], what))
        add(Case(f"hpldat-run-real-{dat}", ["run-real", "--hpl-dat", dat], what))
        add(Case(f"hpldat-sweep-{dat}", ["sweep", dat, "--db", "r.sqlite"], what, absent=["r.sqlite"]))
    for spec, what in [
        ("spec_empty.yaml", r"spec_empty\.yaml"), ("spec_unknown.yaml", r"unknown field.*colour"),
        ("spec_nb0.yaml", r"nb"), ("spec_badrange.yaml", r"from|to"), ("spec_seed_neg.yaml", r"seeds\[0\]: expected an integer in 0 \.\. 2\*\*64-1 .*, got -1"),
        ("spec_seed_big.yaml", r"seeds\[0\]: expected an integer in 0 \.\. 2\*\*64-1 \(the emulation's seeds are unsigned 64-bit\), got 18446744073709551616"), ("spec_factor_neg.yaml", r"platform\.variations\[0\]\.bandwidth: expected a positive factor .*, got -1"),
        ("spec_fat.yaml", r"fat_tree '2;4,4;1,2;1,2' has 16 leaves"), ("spec_grid.yaml", r"grids"),
        ("spec_timeout.yaml", r"timeout: expected a positive number of seconds, got -3"), ("spec_not_yaml.yaml", r"YAML"), ("spec_speed.yaml", r"model\.variations\[0\]\.speed: expected a positive speed factor .*, got 0"),
        ("spec_missing_platform.yaml", r"nowhere\.yaml"), ("missing_spec.yaml", r"missing_spec\.yaml"),
    ]:
        add(Case(f"sweep-{spec}", ["sweep", spec, "--db", "r.sqlite"], what, absent=["r.sqlite"]))
        if spec not in DRY_RUN_REPORTS:
            add(Case(f"sweep-dry-{spec}", ["sweep", "run", spec, "--dry-run"], what))
    for archive, what in [
        ("missing.zip", r"missing\.zip: no such file"), ("not_zip.zip", r"not a readable zip archive"),
        ("no_meta.zip", r"not a calibration archive \(no metadata\.yaml\)"), ("bad_meta.zip", r"corrupt metadata"),
        ("afile", r"afile"),
    ]:
        add(Case(f"archive-{archive}", ["archive", "show", archive], what))
        add(Case(f"check-add-{archive}", ["check", "add", "h.sqlite", archive],
                 r"missing\.zip|not_zip\.zip|no_meta\.zip|bad_meta\.zip|afile", absent=["h.sqlite"]))
    add(Case("archive-member", ["archive", "show", "bad_member.zip", "--member", "nothing.csv"], r"no member 'nothing\.csv'"))
    for history, what in [
        ("history_dup_conflict.csv", r"run 1 of h CPU 0 is listed twice with different values"),
        ("history_nocols.csv", r"history_nocols\.csv: expected columns host, cpu, run_id, start_time .*, got columns a, b"),
        ("history_badcpu.csv", r"history_badcpu\.csv: cpu \(line 2\): expected a CPU index \(an integer\), got 'x'"), ("history_empty.csv", r"empty"),
        ("missing.csv", r"history missing\.csv does not exist"), ("afile", r"afile"),
    ]:
        add(Case(f"check-{history}", ["check", history], what))
        add(Case(f"check-json-{history}", ["check", history, "--json"], what))
    add(Case("sweep-show-missing", ["sweep", "show", "missing.sqlite"], r"no results store at missing\.sqlite"))
    add(Case("sweep-show-csv-dest", ["sweep", "show", "missing.sqlite", "--csv", "afile/x.csv"],
             r"cannot write the CSV \(--csv\) afile/x\.csv"))
    add(Case("sweep-show-plot-dest", ["sweep", "show", "missing.sqlite", "--plot", "afile/p"],
             r"cannot write the plots \(--plot\) into afile/p"))
    add(Case("sweep-show-not-sqlite", ["sweep", "show", "history.csv"], r"history\.csv"))
    # report: every input recognised or refused by name, the page checked before the work
    for rid, args, what in [
        ("missing", ["missing.zip"], r"missing\.zip: no such file or directory"),
        ("not-hplsim", ["afile"], r"afile: not a trace or validate directory"),
        ("dest-file", ["good_model.yaml", "-o", "afile/r.html"], r"cannot write the report \(-o\) afile/r\.html"),
        ("dest-folder", ["good_model.yaml", "-o", "."], r"cannot write the report \(-o\) \.: it is a folder"),
        ("one-size-mpi", ["mpi_one_size.csv"], r"every send measurement has the same size"),
        ("history", ["history_empty.csv"], r"empty"),
        ("no-input", [], r"Missing argument 'INPUTS"),
    ]:
        add(Case(f"report-{rid}", ["report", *args], what, absent=["report.html"]))
    # a binary file where a text document is expected: one line naming the file, whichever reads it
    for rid, args, what in [
        ("predict-model", ["predict", *SMALL, "--model", "binary.yaml"], r"model file binary\.yaml: not a text file"),
        ("predict-platform", ["predict", *SMALL, "--platform", "binary.yaml"],
         r"platform file binary\.yaml: not a text file"),
        ("predict-hpl-dat", ["predict", "--hpl-dat", "binary.yaml"], r"HPL\.dat binary\.yaml: not a text file"),
        ("sweep-spec", ["sweep", "binary.yaml", "--db", "b.sqlite"], r"sweep spec binary\.yaml: not a text file"),
        ("fit-platform", ["fit", "mpi_tiny.csv", "--network", "--platform", "binary.yaml", "-o", "m.yaml"],
         r"platform spec binary\.yaml: not a text file"),
    ]:
        add(Case(f"binary-{rid}", args, what, absent=["b.sqlite", "m.yaml"]))
    add(Case("unknown-subcommand", ["frobnicate"], r"No such command 'frobnicate'"))
    return c


#: specs whose invalid combinations a dry run reports (exit 0: that is its job)
DRY_RUN_REPORTS = {"spec_nb0.yaml", "spec_grid.yaml"}
CASES = _cases()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad-input")
    _write_files(folder)
    return folder


def _descendants() -> list[int]:
    out, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            continue
    return out


def _our_temp_dirs() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob(f"hplsim-*-{os.getpid()}-*")}


def test_the_corpus_is_large_and_covers_every_subcommand():
    from hplsim.cli import SUBCOMMANDS

    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)
    used = {c.args[0] for c in CASES}
    assert set(SUBCOMMANDS) <= used, set(SUBCOMMANDS) - used


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, inputs: Path):
    before = set(os.listdir(inputs))
    dirs_before = _our_temp_dirs()
    # the command's own children: earlier tests of this worker may have left their own
    # (multiprocessing's resource tracker lives as long as the process that started a pool)
    children_before = set(_descendants())
    code, out, err = invoke(case.args, inputs)
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("hplsim: error:")]
    assert code in (1, 2), (code, err)
    if case.code is not None:
        assert code == case.code
    assert "Traceback" not in err and "Traceback" not in out
    assert len(errors) == 1, err
    assert not any(line.startswith("hplsim:") is False and line.strip() for line in lines[lines.index(errors[0]):]), err
    assert re.search(case.message, errors[0].removeprefix("hplsim: error: ")), errors[0]
    assert "internal error" not in errors[0]
    # no partial or stale file, no temporary file, no child process, no temporary folder
    new = set(os.listdir(inputs)) - before
    assert not [n for n in new if n.endswith(".tmp") or ".hplsim-probe-" in n], new
    for name in case.absent:
        if name not in before:
            assert not (inputs / name).exists(), name
    assert not new - {"pout", "r.sqlite.files"}, new
    assert set(_descendants()) <= children_before
    assert _our_temp_dirs() <= dirs_before
    for name in new:  # what an error created (an empty folder at most) goes for the next case
        path = inputs / name
        if path.is_dir():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()


assert sys.platform.startswith("linux")
