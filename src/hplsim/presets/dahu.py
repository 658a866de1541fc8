"""The Dahu preset: the published Dahu platform, per-CPU dgemm models and other kernels
(``../shared/data/dahu``, from the HPL-on-SMPI authors), converted to our formats.

The converted files ship in ``hplsim/data/dahu``; `convert` regenerates them from the
published CSVs and a test checks that the shipped copy is exactly that conversion.
"""

from __future__ import annotations

import csv
from pathlib import Path

from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import HostModel, KernelModel, ModelFile, Polynomial, KERNEL_VARIABLES, save_model

DATA = Path(__file__).resolve().parents[1] / "data" / "dahu"
PLATFORM_XML = DATA / "platform.xml"
MODEL_FILE = DATA / "model.yaml"
NODES = 32
RANKS_PER_NODE = 32

PROVENANCE = {
    "source": "Ezibenroc/thesis, Ezibenroc/HPL-paper, Ezibenroc/hpl (public GitHub), as collected in shared/data/dahu",
    "dgemm": "dgemm_model_per_cpu.csv: per-CPU polynomial mu and sigma, half-normal noise shifted to mean 0",
    "other_kernels": "other_kernels.csv: duration = size x c, c half-normal with mean mu and sd sigma",
    "mapping": "host dahu-i.grid5000.fr (the published platform's host names) is node i+1; "
    "CPU index 0/1 of a host is cpu 2*node / 2*node+1; a rank's CPU is its local rank modulo 2 "
    "(even ranks on CPU 0)",
}

# other_kernels.csv's size column -> our term over the kernel's variables
_SIZE_TERMS = {"M*M*N if side is left else M*N*N": "mnk", "M*N": "mn", "N": "n", "1": "intercept", "M1*N": "m1*n"}
_DGEMM_TERMS = ("intercept", "mnk", "mn", "mk", "nk")


def host_name(node: int) -> str:
    """SimGrid name of Dahu's node `node` (numbered from 1 in the models) in the published platform."""
    return f"dahu-{node - 1}.grid5000.fr"


def _halfnormal(kernel: str, mean: dict[str, float], sigma: dict[str, float]) -> KernelModel:
    v = KERNEL_VARIABLES[kernel]
    return KernelModel(kernel, Polynomial.from_mapping(v, mean), "halfnormal", sigma=Polynomial.from_mapping(v, sigma))


def convert(data_dir: Path) -> ModelFile:
    other: dict[str, KernelModel] = {}
    with open(data_dir / "other_kernels.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["size"] == "0":
                continue  # "size 0: the kernel costs nothing" = absent from the model
            term = _SIZE_TERMS[row["size"]]
            other[row["kernel"]] = _halfnormal(row["kernel"], {term: float(row["mu"])}, {term: float(row["sigma"])})

    def dgemm(row: dict[str, str]) -> KernelModel:
        return _halfnormal(
            "dgemm",
            {t: float(row[f"mu_{t}"]) for t in _DGEMM_TERMS},
            {t: float(row[f"sigma_{t}"]) for t in _DGEMM_TERMS},
        )

    hosts: dict[str, HostModel] = {}
    default = None
    with open(data_dir / "dgemm_model_per_cpu.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if row["cpu"] == "default":
            default = HostModel(kernels={**other, "dgemm": dgemm(row)})
            continue
        node, cpu = int(row["node"]), int(row["cpu"])
        host = hosts.setdefault(host_name(node), HostModel(cpus=[{}, {}]))
        host.cpus[cpu - 2 * node] = {"dgemm": dgemm(row)}
    return ModelFile(
        default=default,
        hosts=dict(sorted(hosts.items(), key=lambda kv: int(kv[0].split("-")[1].split(".")[0]))),
        description="Dahu (Grid'5000): published per-CPU polynomial dgemm + half-normal noise, other kernels",
        provenance=PROVENANCE,
    )


def validation_config(n: int) -> HplConfig:
    """The HPL parameters of the Dahu validation runs (data README)."""
    return HplConfig(
        n=n, nb=128, p=32, q=32, pmap=0, pfact=1, nbmin=2, ndiv=2, rfact=2, bcast=2, depth=1,
        swap=0, swap_threshold=64, l1_transposed=True, u_transposed=True, equil=True, align=8,
    )


if __name__ == "__main__":  # regenerate the shipped copy: python -m hplsim.presets.dahu DATA_DIR
    import shutil
    import sys

    src = Path(sys.argv[1])
    DATA.mkdir(parents=True, exist_ok=True)
    save_model(convert(src), MODEL_FILE)
    shutil.copyfile(src / "dahu_platform.xml", PLATFORM_XML)
