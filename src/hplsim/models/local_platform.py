"""This machine as a platform for `hplsim validate`: one node whose ranks talk through its
loopback link, with the SMPI options fitted from an MPI calibration between two local
ranks (`hplsim.calibrate.local.calibrate_network`) relative to that link.

    smpi, mpi, notes = fit_network_options(Path("calibration/mpi.zip"))
    spec = local_platform_spec(2, smpi, mpi=mpi)     # a platform spec (docs/formats/platform.md)
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from hplsim.models.network import fit_network, smpi_options
from hplsim.models.readers import read_measurements

#: reference link of the one-node platform: bw-factor and lat-factor are relative to it
LOOPBACK_BANDWIDTH = 10e9
LOOPBACK_LATENCY = 1e-6


def fit_network_options(mpi_archive: Path, seed: int = 0) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """SMPI options for messages between two ranks of this host, relative to the loopback
    link of `local_platform_spec`, and the spec's `mpi` block (what MPI_Iprobe reports,
    when the calibration measured it)."""
    meas = read_measurements([mpi_archive])
    fit = fit_network(meas.network, seed=seed)
    options, notes = smpi_options(fit, LOOPBACK_BANDWIDTH, LOOPBACK_LATENCY)
    mpi = {"iprobe_reports": fit.iprobe_reports} if fit.iprobe_reports else {}
    return options, mpi, [*fit.threshold_reasons, *notes]


def local_platform_spec(cores: int, smpi: dict[str, str] | None = None, name: str | None = None,
                        mpi: dict[str, str] | None = None) -> dict[str, Any]:
    """This machine as a platform spec: one node with `cores` rank slots; ranks talk through
    the node's loopback link, whose factors and overheads come from the MPI calibration."""
    return {
        "format": "hplsim-platform",
        "name": name or f"{socket.gethostname()}-local",
        "nodes": 1,
        "cores_per_node": cores,
        "host_prefix": "local-",
        "network": {
            "topology": "star",
            "bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
            "loopback_bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "loopback_latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
        },
        "smpi": dict(smpi or {}),
        **({"mpi": dict(mpi)} if mpi else {}),
    }
