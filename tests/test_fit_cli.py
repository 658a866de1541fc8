"""The `hplsim fit` command: calibration archives, reports, platform specs, a base
model, bad input as one line, and the examples of docs/fit.md run as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from docexamples import examples, python_blocks, run_examples
from helpers import Result, assert_one_line_error, run_cli
from hplsim.calibrate.archive import ArchiveWriter
from hplsim.models.modelfile import load_model
from hplsim.platform.spec import load_platform

DOC = REPO / "docs" / "fit.md"


def assert_error_after_progress(r: Result, pattern: str) -> None:
    """The error line of a check that `hplsim fit` makes once the data are read: the fit's
    report is held until the fit succeeds, so before the error there is at most a warning
    on the data, never a progress line, half a report or a traceback."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines, (r.returncode, r.stderr)
    assert_one_line_error(Result(r.returncode, r.stdout, lines[-1]), pattern)
    assert all(line.startswith("hplsim: warning: ") for line in lines[:-1]), r.stderr

# ----------------------------------------------------------------------- archives


def _dtrsm_calls(rng: np.random.Generator, host: str, cpus: int, reps: int = 8) -> list[dict]:
    rows = []
    sizes = np.round(np.exp(rng.uniform(0, np.log(2000), (60, 2))))
    for cpu in range(cpus):
        for rep in range(reps):
            for i, (m, n) in enumerate(sizes):
                side = "L" if i % 2 else "R"
                t = m if side == "L" else n
                mean = 3e-7 + 6e-11 * m * n * t + 1e-9 * m * n
                rows.append({"function": "dtrsm", "m": m, "n": n, "k": np.nan, "side": side, "duration":
                             mean * (1 + 0.03 * rng.standard_normal()) * (1.05 if cpu else 1.0),
                             "host": host, "cpu": cpu, "core": cpu, "rank": cpu, "repetition": rep})
    return rows


def make_archives(tmp: Path, dahu_dir: Path) -> tuple[Path, Path]:
    """A dgemm+dtrsm archive (dgemm_raw's calls as if measured on two hosts) and an MPI
    archive (Dahu's MPI measurements), in the layout of docs/formats/archive.md."""
    raw = pd.read_csv(dahu_dir / "dgemm_raw.csv")
    raw = raw[raw["expfile"] == "exp_dgemm_a.csv"].sample(6000, random_state=0)
    blas = pd.DataFrame({
        "function": "dgemm", "m": raw["m"], "n": raw["n"], "k": raw["k"], "side": "",
        "duration": raw["duration"], "host": np.where(np.arange(len(raw)) % 2, "node-1", "node-0"),
        "cpu": raw["cpu"], "core": raw["cpu"], "rank": 0, "repetition": 0,
    })
    rng = np.random.default_rng(0)
    blas = pd.concat([blas, pd.DataFrame(_dtrsm_calls(rng, "node-0", 2) + _dtrsm_calls(rng, "node-1", 2))])
    mpi = pd.read_csv(dahu_dir / "mpi_calibration.csv")
    mpi = mpi[mpi["cluster"] == "dahu"]
    mpi = pd.DataFrame({"operation": mpi["experiment"], "size": mpi["msg_size"], "duration": mpi["duration"],
                        "start": 0.0, "repetition": 0, "rank": 0, "host": "node-0"})
    extra = pd.DataFrame({"operation": ["iprobe"] * 5 + ["wtime"] * 5, "size": 0,
                          "duration": [2e-7, 2.1e-7, 1.9e-7, 2e-7, 2.2e-7] + [5e-8] * 5,
                          "start": 0.0, "repetition": 0, "rank": 0, "host": "node-0"})
    mpi = pd.concat([mpi, extra])
    out = []
    for name, kind, member, table in (("blas.zip", "dgemm", "results/dgemm.csv", blas),
                                      ("mpi.zip", "mpi", "results/mpi.csv", mpi)):
        path = tmp / name
        w = ArchiveWriter()
        w.add_table(member, table)
        w.write(path, {"kind": kind, "status": "complete"}, [])
        out.append(path)
    return out[0], out[1]


@pytest.fixture(scope="module")
def archives(tmp_path_factory, dahu_dir) -> tuple[Path, Path]:
    return make_archives(tmp_path_factory.mktemp("archives"), dahu_dir)


def test_kernel_archive_fits_every_kernel_per_cpu(archives, tmp_path):
    blas, _ = archives
    out = tmp_path / "model.yaml"
    r = run_cli("fit", blas, "--option", "M2,N2", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert [k["kernel"] for k in summary["kernels"]] == ["dgemm", "dtrsm"]
    model = load_model(out)
    assert set(model.hosts) == {"node-0", "node-1"}
    for host in model.hosts.values():
        assert len(host.cpus) == 2
        assert set(host.cpus[0]) == {"dgemm", "dtrsm"}
    assert set(model.default.kernels) == {"dgemm", "dtrsm"}
    # dtrsm's k was empty in the archive: it is the triangle's order, m (side L) or n (R)
    trsm = model.resolve("node-0", 0)["dtrsm"]
    assert trsm.predict({"m": 1000, "n": 500, "k": 1000}) == pytest.approx(3e-7 + 6e-11 * 5e8 + 1e-9 * 5e5, rel=0.05)
    # CPU 1 of the synthetic dtrsm is 5 % slower: per-CPU models see it
    cpu1 = model.resolve("node-0", 1)["dtrsm"].predict({"m": 1000, "n": 500, "k": 1000})
    assert cpu1 / trsm.predict({"m": 1000, "n": 500, "k": 1000}) == pytest.approx(1.05, rel=0.02)


def test_auto_selection_and_report(archives, tmp_path):
    blas, _ = archives
    out, rep = tmp_path / "model.yaml", tmp_path / "report"
    r = run_cli("fit", blas, "--kernel", "dgemm", "--per", "host", "--report", rep, "--folds", 3, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    dgemm = json.loads(r.stdout)["kernels"][0]
    assert dgemm["option"].startswith("M2,")
    assert "within 1%" in dgemm["why"]
    table = pd.read_csv(rep / "dgemm-selection.csv")
    assert set(table["group"]) == {"node-0", "node-1", "(sum of groups)"}
    assert len(table[table["group"] == "node-0"]) == 12  # 3 means x 4 noises
    assert {"aic", "bic", "cv_crps", "cv_rmse", "cv_coverage90"} <= set(table.columns)
    for png in ("dgemm-durations.png", "dgemm-residuals.png", "dgemm-selection.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "simplest option" in (rep / "selection.md").read_text()
    assert set(load_model(out).hosts) == {"node-0", "node-1"}


def test_network_archive_gives_options_and_constants(archives, tmp_path):
    _, mpi = archives
    out = tmp_path / "net.yaml"
    r = run_cli("fit", mpi, "-o", out, "--json", "--report", tmp_path / "rep")
    assert r.returncode == 0, r.stderr
    smpi = yaml.safe_load(out.read_text())["smpi"]
    assert {"smpi/os", "smpi/or", "smpi/ois", "smpi/bw-factor", "smpi/lat-factor", "smpi/async-small-thresh",
            "smpi/send-is-detached-thresh", "smpi/iprobe", "smpi/wtime"} <= set(smpi)
    assert float(smpi["smpi/iprobe"]) == pytest.approx(2e-7)
    assert (tmp_path / "rep" / "network-segments.csv").exists()
    assert "split at" in (tmp_path / "rep" / "network-search.txt").read_text()
    assert (tmp_path / "rep" / "network.png").exists()


def _check_piecewise(value: str, fields: int) -> list[list[float]]:
    entries = [[float(x) for x in e.split(":")] for e in value.split(";")]
    assert all(len(e) == fields for e in entries), value
    sizes = [e[0] for e in entries]
    assert sizes[0] == 0 and sizes == sorted(sizes) and len(set(sizes)) == len(sizes), value
    assert all(x >= 0 for e in entries for x in e), value
    return entries


def test_network_options_are_well_formed_and_consistent(dahu_dir, tmp_path):
    out = tmp_path / "net.yaml"
    r = run_cli("fit", dahu_dir / "mpi_calibration.csv", "--network", "--cluster", "dahu", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    smpi = yaml.safe_load(out.read_text())["smpi"]
    for key in ("smpi/os", "smpi/or", "smpi/ois"):
        _check_piecewise(smpi[key], 3)
    bw = _check_piecewise(smpi["smpi/bw-factor"], 2)
    _check_piecewise(smpi["smpi/lat-factor"], 2)
    detached = int(smpi["smpi/send-is-detached-thresh"])
    assert _check_piecewise(smpi["smpi/os"], 3)[-1] == [detached, 0, 0]
    # send switches at the 8-12 kB gap of the data, recv at 63 kB; SimGrid needs async <= detached
    assert 8100 < detached < 12592
    assert int(smpi["smpi/async-small-thresh"]) == detached
    assert any("63064" in n for n in summary["threshold_reasons"])
    assert bw[-1][1] == pytest.approx(0.987, rel=0.05)  # large messages: the published factor
    # the options reproduce the ping-pong: SMPI's one-way time = os + transfer + or (eager), transfer (above)
    mpi = pd.read_csv(dahu_dir / "mpi_calibration.csv")
    pp = mpi[(mpi["cluster"] == "dahu") & (mpi["experiment"] == "pingpong")]
    ref = summary["reference"]

    def piece(value: str, s: float) -> list[float]:
        entries = [[float(x) for x in e.split(":")] for e in value.split(";")]
        return [e for e in entries if e[0] <= s][-1][1:]

    rel = []
    for s, d in zip(pp["msg_size"], pp["duration"]):
        lat, bwf = piece(smpi["smpi/lat-factor"], s)[0], piece(smpi["smpi/bw-factor"], s)[0]
        t = lat * ref["route_latency"] + s / (bwf * ref["bandwidth"])
        if s < detached:
            for key in ("smpi/os", "smpi/or"):
                a, b = piece(smpi[key], s)
                t += a + b * s
        rel.append(t / (d / 2) - 1)
    assert np.median(np.abs(rel)) < 0.05
    assert np.mean(np.abs(rel) < 0.25) > 0.9


def test_network_options_go_into_a_platform_spec_that_runs(dahu_dir, tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text(yaml.safe_dump({"format": "hplsim-platform", "name": "mini", "nodes": 4, "cores_per_node": 1,
                                    "host_prefix": "node-", "network": {"bandwidth": "12.5GBps", "latency": "0.1us"},
                                    "smpi": {"smpi/wtime": "1e-8"}}))
    out = tmp_path / "cluster-calibrated.yaml"
    r = run_cli("fit", dahu_dir / "mpi_calibration.csv", "--cluster", "dahu", "--platform", spec, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reference"]["route_latency"] == pytest.approx(2e-7)
    doc = yaml.safe_load(out.read_text())
    assert doc["nodes"] == 4 and doc["smpi"]["smpi/wtime"] == "1e-8"
    platform = load_platform(out)
    assert 'smpi/bw-factor' in platform.xml and 'smpi/send-is-detached-thresh' in platform.xml
    model = tmp_path / "model.yaml"
    r = run_cli("fit", dahu_dir / "dgemm_raw.csv", "--kernel", "dgemm", "--option", "M1,N0", "--per", "none", "-o", model)
    assert r.returncode == 0, r.stderr
    # SimGrid parses every fitted option and the emulation runs with them
    r = run_cli("predict", "-N", 1000, "--nb", 64, "-P", 2, "-Q", 2, "--platform", out, "--model", model, "--json",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["gflops"] > 0


def test_base_model_keeps_other_kernels(dahu_dir, tmp_path):
    base = REPO / "src" / "hplsim" / "data" / "dahu" / "model.yaml"
    out = tmp_path / "model.yaml"
    r = run_cli("fit", dahu_dir / "dgemm_raw.csv", "--kernel", "dgemm", "--option", "M2,N2", "--per", "cpu",
                "--base", base, "-o", out)
    assert r.returncode == 0, r.stderr
    old, new = load_model(base), load_model(out)
    assert set(new.default.kernels) == set(old.default.kernels)
    assert new.default.kernels["dtrsm"] == old.default.kernels["dtrsm"]
    assert new.default.kernels["dgemm"] != old.default.kernels["dgemm"]
    fitted = new.resolve("dahu-4.grid5000.fr", 1)["dgemm"]
    assert fitted.family == "normal" and fitted != old.resolve("dahu-4.grid5000.fr", 1)["dgemm"]
    # other hosts: the new pooled dgemm, not the old per-CPU one
    assert new.resolve("dahu-9.grid5000.fr", 0)["dgemm"] == new.default.kernels["dgemm"]


def test_host_format_maps_nodes(dahu_dir, tmp_path):
    out = tmp_path / "model.yaml"
    r = run_cli("fit", dahu_dir / "dgemm_raw.csv", "--kernel", "dgemm", "--option", "M1,N1",
                "--host-format", "dahu-{node-1}", "-o", out)
    assert r.returncode == 0, r.stderr
    assert set(load_model(out).hosts) == {"dahu-4"}


# ----------------------------------------------------------------------- bad input


def _wide_and_tall(tmp: Path, seed: int = 0) -> Path:
    """dgemm calls (two CPUs) where a wide call (n > m) takes 12 % longer per flop than the
    tall one of the same m·n·k: what OpenBLAS does on this project's VM (E20, E21)."""
    rng = np.random.default_rng(seed)
    rows = []
    for cpu in (0, 1):
        for _ in range(600):
            a, b = rng.integers(200, 4000, 2)
            k = int(rng.choice([64, 128, 256]))
            m, n = (min(a, b), max(a, b)) if rng.random() < 0.5 else (max(a, b), min(a, b))
            rate = 1e-11 * (1.12 if n > m else 1.0)
            mean = 2e-6 + rate * m * n * k + 2e-10 * m * n
            rows.append({"function": "dgemm", "m": m, "n": n, "k": k, "cpu": cpu, "host": "node-0",
                         "duration": mean * (1 + 0.02 * rng.standard_normal())})
    path = tmp / "wide-tall.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_pieces_give_wide_calls_their_own_law(tmp_path):
    data = _wide_and_tall(tmp_path)
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    assert run_cli("fit", data, "--option", "M2,N1", "--per", "cpu", "-o", one).returncode == 0
    r = run_cli("fit", data, "--option", "M2,N1", "--per", "cpu", "--piece", "dgemm: n > m", "-o", two, "--json")
    assert r.returncode == 0, r.stderr
    wide, tall = {"m": 1800, "n": 3600, "k": 64}, {"m": 3600, "n": 1800, "k": 64}
    truth = {name: 2e-6 + 1e-11 * f * 1800 * 3600 * 64 + 2e-10 * 1800 * 3600
             for name, f in (("wide", 1.12), ("tall", 1.0))}
    for cpu in (0, 1):
        plain = load_model(one).resolve("node-0", cpu)["dgemm"]
        pieced = load_model(two).resolve("node-0", cpu)["dgemm"]
        assert len(pieced.pieces) == 1 and pieced.pieces[0].when[0].text == "n > m"
        off = {}
        for name, sizes in (("wide", wide), ("tall", tall)):
            off[name] = (float(plain.predict(sizes)) / truth[name] - 1, float(pieced.predict(sizes)) / truth[name] - 1)
        # one polynomial splits the difference (its MK and NK terms follow part of it): the wide
        # call too short, the tall one too long; each piece gets its own right
        assert off["wide"][0] < -0.01 and off["tall"][0] > 0.01, off
        assert max(abs(off["wide"][1]), abs(off["tall"][1])) < 0.01, off
    assert len(load_model(two).default.kernels["dgemm"].pieces) == 1
    doc = json.loads(r.stdout)["kernels"][0]
    assert doc["default"]["pieces"][0]["when"] == "n > m"
    assert doc["default"]["n"] + doc["default"]["pieces"][0]["n"] == 1200
    assert all(g["pieces"][0]["n"] > 200 for g in doc["groups"].values())
    assert yaml.safe_load(two.read_text())["provenance"]["kernels"]["dgemm"]["pieces"] == ["n > m"]
    assert "n > m" in r.stderr  # the console lists each piece's fit


@pytest.mark.parametrize("piece, pattern", [
    ("dgemm n > m", "expected KERNEL: CONDITION"),
    ("dgemm: n >> m", "neither a size"),
    ("dgemm: n > n", "does not depend on the sizes"),
    ("dgemm: m > 1e9", "no call where m > 1e9"),
    ("dgemm: m > 0", "every call falls in a piece"),
    ("dtrsm: m > n", "not fitted"),
    ("nope: m > n", "unknown kernel"),
])
def test_bad_pieces_are_one_line(tmp_path, piece, pattern):
    data = _wide_and_tall(tmp_path)
    r = run_cli("fit", data, "--option", "M2,N1", "--piece", piece, "-o", tmp_path / "out.yaml")
    assert_error_after_progress(r, pattern)
    assert not (tmp_path / "out.yaml").exists()


def _csv(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


GOOD = "m,n,k,duration\n" + "".join(f"{m},{n},{k},{1e-6 + 1e-10 * m * n * k}\n"
                                    for m, n, k in [(10, 20, 30), (100, 20, 5), (7, 300, 40), (50, 50, 50),
                                                    (1, 2, 3), (200, 10, 10), (30, 30, 300)])


@pytest.mark.parametrize("name, text, args, pattern", [
    ("empty.csv", "", [], "empty file"),
    ("header.csv", "m,n,k,duration\n", [], "no measurements"),
    ("one.csv", "m,n,k,duration\n" + "64,64,64,1e-5\n" * 20, [], "same sizes"),
    ("nan.csv", GOOD + "10,10,10,nan\n", [], "NaN"),
    ("neg.csv", GOOD + "10,10,10,-1e-6\n", [], "negative"),
    ("cols.csv", "a,b\n1,2\n", [], "unrecognised columns a, b"),
    ("good.csv", GOOD, ["--option", "M3,N2"], "option"),
    ("good.csv", GOOD, ["--per", "cpu"], "cpu"),
    ("nofn.csv", GOOD, ["--kernel", "nope"], "unknown kernel"),
    ("mpi1.csv", "operation,size,duration\n" + "send,100,1e-6\n" * 10, [], "same size"),
    ("mpi0.csv", "operation,size,duration\nsend,100,0\nsend,200,1e-6\nsend,300,2e-6\n", [], "not positive"),
    ("mpiop.csv", "operation,size,duration\nbcast,100,1e-6\nbcast,200,1e-6\n", [], "unknown MPI operation"),
])
def test_bad_input_is_one_line(tmp_path, name, text, args, pattern):
    path = _csv(tmp_path, name, text)
    extra = ["--kernel", "dgemm"] if "--kernel" not in args and not name.startswith("mpi") else []
    r = run_cli("fit", path, *extra, *args, "-o", tmp_path / "out.yaml")
    assert_error_after_progress(r, pattern)
    assert not (tmp_path / "out.yaml").exists()


def test_bad_input_files_and_choices(tmp_path, dahu_dir):
    assert_one_line_error(run_cli("fit", tmp_path / "missing.csv", "--kernel", "dgemm", "-o", tmp_path / "o.yaml"),
                          "no such file")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    assert_one_line_error(run_cli("fit", tmp_path / "bad.zip", "-o", tmp_path / "o.yaml"), "zip|archive")
    assert_one_line_error(run_cli("fit", dahu_dir / "dgemm_raw.csv", "-o", tmp_path / "o.yaml"), "--kernel")
    assert_one_line_error(run_cli("fit", dahu_dir / "mpi_calibration.csv", "-o", tmp_path / "o.yaml"), "--cluster")
    assert_one_line_error(run_cli("fit", dahu_dir / "mpi_calibration.csv", "--cluster", "nowhere",
                                  "-o", tmp_path / "o.yaml"), "no measurements of cluster")
    assert_one_line_error(run_cli("fit", dahu_dir / "dgemm_raw.csv", "--network", "-o", tmp_path / "o.yaml"),
                          "no MPI measurements")


# ----------------------------------------------------------------------- the docs


def _run_doc_commands(dahu_dir: Path, where: Path, slow: bool) -> None:
    files, commands = examples(DOC)
    assert len(commands) >= 6 and not files
    (where / "my-cluster.yaml").write_text(yaml.safe_dump(
        {"format": "hplsim-platform", "nodes": 8, "cores_per_node": 4, "host_prefix": "dahu-",
         "host_suffix": ".grid5000.fr", "network": {"bandwidth": "12.5GBps", "latency": "0.1us"}}))
    run_examples(DOC, where, slow=slow, replace={"reference/dahu/": f"{dahu_dir}/"})


def test_docs_examples_run(dahu_dir, tmp_path):
    _run_doc_commands(dahu_dir, tmp_path, slow=False)
    assert load_model(tmp_path / "host-model.yaml").hosts
    assert not (tmp_path / "model.yaml").exists()  # the slow example's
    time_share = load_model(tmp_path / "time-share.yaml")  # --method time-share: pooled means only
    assert not time_share.hosts and time_share.default.kernels["dgemm"].family == "none"
    assert (tmp_path / "net-report" / "network-segments.csv").exists()
    assert "smpi" in yaml.safe_load((tmp_path / "my-cluster-calibrated.yaml").read_text())


@pytest.mark.slow
def test_slow_docs_examples_run(dahu_dir, tmp_path):
    """The usual line, every option compared per CPU: M-2/N-2 for both CPUs, as the page says."""
    _run_doc_commands(dahu_dir, tmp_path, slow=True)
    model = load_model(tmp_path / "model.yaml")
    assert model.hosts and model.default.kernels["dgemm"].family == "normal"
    assert (tmp_path / "report" / "selection.md").exists()
    assert "M2,N2" in (tmp_path / "report" / "selection.md").read_text()


def test_docs_python_example_runs(dahu_dir, tmp_path, monkeypatch):
    code = python_blocks(DOC)
    assert code
    monkeypatch.chdir(tmp_path)
    for block in code:
        exec(compile(block.replace("reference/dahu/", f"{dahu_dir}/"), str(DOC), "exec"), {})
    assert load_model(tmp_path / "model.yaml").hosts
