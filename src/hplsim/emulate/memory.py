"""Folded memory: huge pages when the machine offers them, and the mapping budget.

The matrix is one lazily mapped memory file per rank (csrc/kernel-models/matrix.c), and
the panel buffers, which SMPI's shared malloc folds one block per mapping (so that it never
copies them in a message), are remapped as one lazily mapped file each (panel.c): neither
their mappings nor their page tables grow with N. Huge pages still make SMPI's own
folding cheaper while a buffer is allocated. The number of mappings is bounded by
``vm.max_map_count``: a run needing more is refused up front with what to do about it.
"""

from __future__ import annotations

import os
from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.sysinfo import meminfo_kib

HUGE_PAGE = 2 * 1024 * 1024
DEFAULT_BLOCK = 1024 * 1024
#: vm.max_map_count is an int in the kernel: no sysctl can raise it further
KERNEL_MAX_MAP_COUNT = 2**31 - 1


def hugepage_mount() -> str | None:
    """A writable hugetlbfs mount of 2 MiB pages with pages reserved, or None.

    ``HPLSIM_HUGEPAGES=0`` disables them; ``HPLSIM_HUGEPAGES=/path`` names the mount.
    """
    env = os.environ.get("HPLSIM_HUGEPAGES")
    if env == "0":
        return None
    if meminfo_kib("Hugepagesize") != 2048 or (meminfo_kib("HugePages_Total") or 0) < 1:
        return None
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) < 4 or parts[2] != "hugetlbfs":
            continue
        if "pagesize=" in parts[3] and "pagesize=2M" not in parts[3]:
            continue
        if env and parts[1] != env:
            continue
        if os.access(parts[1], os.W_OK):
            return parts[1]
    return None


def folding_config() -> dict[str, str]:
    mount = hugepage_mount()
    if mount is None:
        return {}
    return {"smpi/shared-malloc-hugepage": mount, "smpi/shared-malloc-blocksize": str(HUGE_PAGE)}


def max_map_count() -> int:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 65530


def estimated_mappings(config: HplConfig, block: int) -> int:
    """Peak mappings of a simulation, whatever N. The matrix is one lazily mapped file per
    rank (csrc/kernel-models/matrix.c); a panel buffer (about 8·NB·(N/P + N/Q) bytes) is
    folded by SMPI's shared malloc one block per mapping, then refolded as one mapping
    (panel.c), so only the buffer being allocated counts its blocks, once. Every rank maps
    about 26 things anyway (measured: 578 mappings for 16 ranks at N=50,000, 447 at
    NB=1024; about 26 per rank at 6,006 ranks: its copy of the binary, stack, data, the
    folded buffers' edges); 30 per rank and 200 for the process leave a margin."""
    panel = 8 * config.nb * (config.n // config.p + config.n // config.q + 2 * config.nb)
    return panel // block + 30 * config.ranks + 200


# A mapping's kernel objects (this kernel's slab sizes): its vm_area_struct (192 B) and, for
# a private or partly private one, an anon_vma_chain (64 B); 256 B is the round figure.
MAPPING_KERNEL_BYTES = 256


# Folding costs no memory, but the folded buffers still need addresses: every rank's
# matrix and panels are address ranges of the one simulation process, whose user space
# is 2**47 bytes (128 TiB) on x86-64 with 4-level page tables. Leave room for the rest.
ADDRESS_SPACE = 2**47
ADDRESS_MARGIN = 0.9


def virtual_bytes(config: HplConfig) -> int:
    """The address space a simulation reserves: the matrix (8·N·(N+1) bytes over all ranks)
    and depth+1 panels per rank."""
    panels = (config.depth + 1) * 8 * config.nb * config.n * (config.p + config.q)
    return 8 * config.n * (config.n + 1) + panels


def check_mapping_budget(config: HplConfig, folding: dict[str, str]) -> None:
    block = int(folding.get("smpi/shared-malloc-blocksize", DEFAULT_BLOCK))
    need, limit = estimated_mappings(config, block), max_map_count()
    if 2 * need > KERNEL_MAX_MAP_COUNT:
        raise HplsimError(
            f"N={config.n} on {config.p}x{config.q} is beyond what memory folding can serve on any Linux machine: "
            f"it takes about {need:.3g} memory mappings, more than the kernel allows one process "
            f"({KERNEL_MAX_MAP_COUNT:,})")
    space = virtual_bytes(config)
    if space > ADDRESS_MARGIN * ADDRESS_SPACE:
        raise HplsimError(
            f"N={config.n} on {config.p}x{config.q} is beyond what memory folding can serve on this machine: "
            f"its matrix and panels need {space / 2**40:,.3g} TiB of addresses (they cost no memory, but every "
            f"rank's share is an address range of the one simulation process), and a process has "
            f"{ADDRESS_SPACE / 2**40:.0f} TiB")
    if need > 0.9 * limit:
        hint = ("raise it (sysctl -w vm.max_map_count=%d)" % (2 * need)) if folding else (
            "enable huge pages (see docs/predict.md) or raise it (sysctl -w vm.max_map_count=%d)" % (2 * need))
        raise HplsimError(
            f"N={config.n} on {config.p}x{config.q} needs about {need:,} memory mappings to fold its panels "
            f"(about {need * MAPPING_KERNEL_BYTES / 2**20:,.0f} MB of kernel memory), more than this machine "
            f"allows (vm.max_map_count = {limit:,}): {hint}"
        )
