"""The emulated program's code shared by all ranks (csrc/kernel-models/sharedtext.c,
docs/validation.md E75): SMPI copies the program once per rank; each copy's read-only
segments are mapped again from the program it was copied from, so that every rank runs
the same physical pages. The same code runs at the same addresses, so a run lands on the
same bits as the reference (HPLSIM_SHARED_TEXT=off: each copy keeps its own pages), and
its memory drops by about one copy of the code per rank."""

from __future__ import annotations

import struct

import pytest

from hplsim.errors import HplsimError
from hplsim.hpl.build import EMULATED, hpl_binary
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT


def _code_bytes() -> int:
    """Bytes of the emulated program's executable segments, from its ELF program headers
    (64-bit little-endian, as every build here)."""
    data = hpl_binary(EMULATED).read_bytes()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    total = 0
    for i in range(phnum):
        p_type, p_flags, _off, _vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            total += p_filesz
    return total


def test_shared_code_gives_the_same_run_in_less_memory(monkeypatch):
    platform = load_platform(DEFAULT.platform, DEFAULT.ranks_per_host)
    model = ModelSource.from_path(DEFAULT.model)
    # 256 ranks on eight nodes, about 6 s: many samples of the memory, and a saving (about
    # 44 MB quiet) far above the sampler's spread; 64 ranks ran 1.2 s and saved 11 MB quiet,
    # but twice in the full suite (two workers) read as none (-3.4 MB)
    config = HplConfig(n=4000, nb=64, p=16, q=16, swap=1, depth=1, bcast=1)
    out = {}
    for shared in ("off", "on"):
        monkeypatch.setenv("HPLSIM_SHARED_TEXT", shared)
        out[shared] = predict(config, platform, model, seed=3)
    assert out["on"].time_s == out["off"].time_s
    saved = out["off"].sim_memory_bytes - out["on"].sim_memory_bytes
    assert saved > 0.5 * config.ranks * _code_bytes(), (saved, _code_bytes())


@pytest.mark.parametrize("switch", ["HPLSIM_SHARED_TEXT", "HPLSIM_SHARED_PIPID"])
def test_a_misspelt_sharing_switch_is_refused(monkeypatch, switch):
    """Each of the runtime's sharing switches (this file's, pipid.c's) takes 'on' or 'off'."""
    monkeypatch.setenv(switch, "yes")
    config = HplConfig(n=400, nb=32, p=2, q=2)
    platform = load_platform(DEFAULT.platform, DEFAULT.ranks_per_host)
    with pytest.raises(HplsimError, match=switch):
        predict(config, platform, ModelSource.from_path(DEFAULT.model), seed=1)
