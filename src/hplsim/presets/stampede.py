"""The Stampede preset: TACC's Stampede as the HPL-on-SMPI authors modelled it to emulate its
June 2013 TOP500 run (5,168 Tflops; N = 3,875,000, NB = 1024, 77 x 78 ranks, one per node).

The model is the authors' Stampede kernel laws with MKL's automatic-offload rule: a dgemm
or dtrsm call large enough runs on the node's Xeon Phi (KNC), the others on its two Xeon
E5-2680; here a piece per accelerator law. Every figure, its source, and what was assumed
where the authors publish nothing: docs/presets.md. `model()` builds the shipped
``hplsim/data/stampede/model.yaml`` (regenerate: ``python -m hplsim.presets.stampede``).
"""

from __future__ import annotations

from pathlib import Path

from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import KERNEL_VARIABLES, CONDITION_VARIABLES, Condition, HostModel, KernelModel, \
    ModelFile, Piece, Polynomial, save_model

DATA = Path(__file__).resolve().parents[1] / "data" / "stampede"
PLATFORM_SPEC = DATA / "platform.yaml"
MODEL_FILE = DATA / "model.yaml"
RANKS_PER_NODE = 1
MACHINE_STATE = "Stampede (TACC) as of its June 2013 TOP500 run, as the HPL-on-SMPI authors modelled it"

#: The TOP500 run (June 2013): HPL's own output of that run, as the authors quote it
#: (Ezibenroc/simulating_mpi_applications_at_scale, journal.org).
TOP500_N = 3_875_000
TOP500_GFLOPS = 5_168_100.0

#: Seconds per unit of the kernel's flop term: dgemm M·N·K; dtrsm (side right, as the
#: authors calibrated it) M·N², i.e. order of the triangle squared times the other side —
#: our `mnk` term for dtrsm whatever the side. CPU: the two Xeon E5-2680 with MKL; KNC:
#: the Xeon Phi SE10P through MKL's automatic offload.
COEFFICIENTS = {
    ("dgemm", "cpu"): 1.029e-11,
    ("dgemm", "knc"): 1.981e-12,
    ("dtrsm", "cpu"): 9.882e-12,
    ("dtrsm", "knc"): 1.954e-12,
}
#: MKL's automatic offload rule as the authors emulated it: which calls the KNC runs.
OFFLOAD = {
    "dgemm": ("m > 1280", "n > 1280", "k > 256"),
    "dtrsm": ("m > 512", "n > 512"),
}

PROVENANCE = {
    "source": "Cornebize, Legrand, Heinrich: Emulating High Performance Linpack on a commodity server at the "
              "scale of a supercomputer (2017); their Stampede coefficients (Ezibenroc/m2_internship_scripts "
              "deploy.sh, 2017-07-28, 'use the coefficients for Stampede') and offload rule "
              "(Ezibenroc/hpl include/hpl_blas.h, 2017-07-23)",
    "dgemm": "seconds = c * m*n*k; c = 1.029e-11 (CPU) or 1.981e-12 (KNC) when m > 1280, n > 1280 and k > 256",
    "dtrsm": "seconds = c * (order of the triangle)^2 * (other side); c = 9.882e-12 (CPU) or 1.954e-12 (KNC) "
             "when m > 512 and n > 512",
    "other_kernels": "absent (cost 0), as in the authors' Stampede emulation",
    "noise": "none (the authors' Stampede laws are deterministic)",
}


def _law(kernel: str, where: str) -> KernelModel:
    return KernelModel(kernel, Polynomial.from_mapping(KERNEL_VARIABLES[kernel], {"mnk": COEFFICIENTS[kernel, where]}))


def model() -> ModelFile:
    kernels = {}
    for kernel, rule in OFFLOAD.items():
        when = tuple(Condition.parse(c, CONDITION_VARIABLES[kernel]) for c in rule)
        cpu = _law(kernel, "cpu")
        kernels[kernel] = KernelModel(kernel, cpu.mean, pieces=(Piece(when, _law(kernel, "knc")),))
    return ModelFile(
        default=HostModel(kernels=kernels),
        description="Stampede (TACC, 2013): dgemm and dtrsm on 2 x Xeon E5-2680 or, by MKL's offload rule, "
                    "on the Xeon Phi (KNC); the HPL-on-SMPI authors' laws",
        provenance=PROVENANCE,
    )


def top500_config(n: int = TOP500_N) -> HplConfig:
    """The TOP500 run's HPL parameters (its output file), at order `n`."""
    return HplConfig(
        n=n, nb=1024, p=77, q=78, pmap=1, pfact=2, nbmin=4, ndiv=2, rfact=1, bcast=5, depth=0,
        swap=0, swap_threshold=64, l1_transposed=False, u_transposed=False, equil=False, align=8,
    )


if __name__ == "__main__":  # regenerate the shipped model: python -m hplsim.presets.stampede
    save_model(model(), MODEL_FILE)
