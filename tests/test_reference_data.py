"""The reference data ship with the project, unchanged (reference/README.md): a clone
anywhere has every file the suite and the benchmarks judge hplsim against."""

from __future__ import annotations

import hashlib
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


def test_every_reference_file_is_present_and_unchanged():
    sums = (REFERENCE / "dahu" / "SHA256SUMS").read_text().split("\n")
    listed = {}
    for line in filter(None, sums):
        digest, name = line.split()
        listed[name] = digest
    assert {"hpl_reality.csv", "hpl_factorial_nb128.csv", "dgemm_calibration_history.csv"} <= set(listed)
    for name, digest in listed.items():
        assert hashlib.sha256((REFERENCE / "dahu" / name).read_bytes()).hexdigest() == digest, name
    data = {p.name for p in (REFERENCE / "dahu").iterdir()} - {"SHA256SUMS", "README.md"}
    assert data == set(listed), "a reference file without a checksum (add it to SHA256SUMS)"


def test_held_back_data_stay_out():
    """The NB = 256 half of the factorial is the external test set: it must not ship."""
    import csv

    with open(REFERENCE / "dahu" / "hpl_factorial_nb128.csv", newline="") as f:
        sizes = {row["block_size"] for row in csv.DictReader(f)}
    assert sizes == {"128"}
    assert not [p for p in REFERENCE.rglob("*") if "geometry" in p.name or "nb256" in p.name]
