"""Folded memory: huge pages when the machine offers them, and the mapping budget.

SMPI folds the matrix by mapping one small file block over and over (shared malloc).
With 4 KiB pages every 1 MiB block is one mapping whose page tables are filled at once;
with 2 MiB huge pages the same folding costs far fewer page-table entries (4x4, N=50k:
8.6 s instead of 14.4 s here, identical result). The number of mappings is bounded by
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
    """Mappings of the folded buffers (one per block: the matrix, 8·N² bytes over all
    ranks, and depth+1 panels per rank of about 8·NB·(N/P + N/Q) bytes each) plus what
    every rank maps anyway: measured at 32x32 (19,623 mappings for 1,024 ranks), 5 for
    its private copy of the binary, about 8 anonymous (stack, data) and 6 folded-buffer
    edges; 24 leaves a margin."""
    matrix_bytes = 8 * config.n * (config.n + 1)
    panel_bytes = (config.depth + 1) * 8 * config.nb * config.n * (config.p + config.q)
    return (matrix_bytes + panel_bytes) // block + 24 * config.ranks


def check_mapping_budget(config: HplConfig, folding: dict[str, str]) -> None:
    block = int(folding.get("smpi/shared-malloc-blocksize", DEFAULT_BLOCK))
    need, limit = estimated_mappings(config, block), max_map_count()
    if 2 * need > KERNEL_MAX_MAP_COUNT:
        raise HplsimError(
            f"N={config.n} on {config.p}x{config.q} is beyond what memory folding can serve on any Linux machine: "
            f"folding its {8 * config.n * config.n / 1e12:.3g} TB matrix takes about {need:.3g} memory mappings, "
            f"more than the kernel allows one process ({KERNEL_MAX_MAP_COUNT:,})")
    if need > 0.9 * limit:
        hint = ("raise it (sysctl -w vm.max_map_count=%d)" % (2 * need)) if folding else (
            "enable huge pages (see docs/predict.md) or raise it (sysctl -w vm.max_map_count=%d)" % (2 * need))
        raise HplsimError(
            f"N={config.n} on {config.p}x{config.q} needs about {need:,} memory mappings to fold the matrix, "
            f"more than this machine allows (vm.max_map_count = {limit:,}): {hint}"
        )
