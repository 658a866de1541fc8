"""Built-in platforms and models. The default one is Dahu (Grid'5000) as of March 2019: the
published platform with its network as measured under HPL's load (docs/validation.md E52),
32 ranks per node, and the published per-CPU models, converted to our format. `dahu-2020`
is the same cluster in January 2020, after its cooling repair: the same platform, each
CPU's dgemm from that month's calibrations (E58).
Stampede (TACC, 2013) is the HPL-on-SMPI paper's own supercomputer-scale case
(docs/presets.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import Platform, load_platform
from hplsim.presets import dahu, dahu2020, stampede


@dataclass(frozen=True)
class Preset:
    name: str
    platform: Path
    model: Path
    config: Callable[[int], HplConfig]
    ranks_per_host: int
    description: str
    # What the cluster's MPI_Iprobe reported (docs/formats/platform.md): not in SimGrid's
    # XML, so set here, on every platform loaded from the preset (`load_platform`).
    iprobe_reports: str = "arrived"
    #: which state of the machine the preset describes, said whenever it runs
    machine_state: str = ""

    def load_platform(self, ranks_per_host: int | None = None, fat_tree_as_star: bool = False) -> Platform:
        """The preset's platform as `hplsim predict --preset` runs it: its ranks per host
        (unless given), its MPI semantics, labelled ``builtin:NAME`` (``builtin:NAME:star``
        with `fat_tree_as_star`)."""
        p = load_platform(self.platform, ranks_per_host or self.ranks_per_host, fat_tree_as_star)
        p.label = f"builtin:{self.name}" + (":star" if fat_tree_as_star else "")
        return dataclasses.replace(p, iprobe_reports=self.iprobe_reports)


PRESETS = {
    "dahu": Preset(
        "dahu", dahu.PLATFORM_XML, dahu.MODEL_FILE, dahu.validation_config, dahu.RANKS_PER_NODE,
        "Dahu, 32 nodes x 32 cores (1,024 ranks), the published platform with its network measured under load, "
        "published per-CPU dgemm models; "
        "HPL parameters of the 2019 validation runs (N given by the user)",
        # Open MPI 2.0.2's cm over PSM2 (Omni-Path): a probe is one probe late for a message
        # from another node, not for one from the same node (docs/validation.md E39). On the
        # validation runs' 32x32 row-major grid every probe is within a node.
        iprobe_reports="progressed-between-nodes",
        machine_state=dahu.MACHINE_STATE,
    ),
    "dahu-2020": Preset(
        "dahu-2020", dahu2020.PLATFORM_XML, dahu2020.MODEL_FILE, dahu.validation_config, dahu2020.RANKS_PER_NODE,
        "Dahu in January 2020 (after the cooling repair), 32 nodes x 32 cores (1,024 ranks), the dahu preset's "
        "platform, each CPU's dgemm from the January 2020 calibrations; "
        "HPL parameters of the 2019 validation runs (N given by the user)",
        iprobe_reports="progressed-between-nodes",  # the same MPI stack (E18, E51)
        machine_state=dahu2020.MACHINE_STATE,
    ),
    "stampede": Preset(
        "stampede", stampede.PLATFORM_SPEC, stampede.MODEL_FILE, stampede.top500_config, stampede.RANKS_PER_NODE,
        "Stampede (TACC), 6,400 nodes on an FDR fat-tree, CPU + Xeon Phi (MKL offload) dgemm/dtrsm laws; "
        "HPL parameters of its June 2013 TOP500 run (77 x 78 ranks, NB 1024; N given by the user)",
        machine_state=stampede.MACHINE_STATE,
    ),
}
DEFAULT = PRESETS["dahu"]


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise HplsimError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
