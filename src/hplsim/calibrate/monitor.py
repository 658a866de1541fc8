"""Background sampling of core frequency and temperature while a calibration runs.

dgemm's speed follows the core frequency, which follows power and temperature: samples
taken every second next to the measurements let the analysis tell a slow node from a hot
or throttled one. Sources, best first:
- frequency: cpufreq's ``scaling_cur_freq`` (per logical CPU), else the ``cpu MHz`` lines of
  /proc/cpuinfo (what virtual machines usually expose, often a constant);
- temperature: hwmon drivers (coretemp per core, k10temp/zenpower per package), else
  /sys/class/thermal zones (per package or board).
What is not exposed is said in `describe()` and ends up in the archive's metadata.
Timestamps are ``time.monotonic()``: CLOCK_MONOTONIC, the clock of the results' ``start``.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SYS_CPU = Path("/sys/devices/system/cpu")
HWMON = Path("/sys/class/hwmon")
THERMAL = Path("/sys/class/thermal")
PROC_CPUINFO = Path("/proc/cpuinfo")
CPU_HWMON_DRIVERS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "soc_thermal")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _logical_cpus() -> list[int]:
    ids = []
    for d in SYS_CPU.glob("cpu[0-9]*"):
        if d.name[3:].isdigit():
            ids.append(int(d.name[3:]))
    return sorted(ids)


def _topology(cpu: int, name: str) -> int | None:
    text = _read(SYS_CPU / f"cpu{cpu}" / "topology" / name)
    return int(text) if text and text.lstrip("-").isdigit() else None


@dataclass
class _TempSensor:
    path: Path
    cores: list[int | None]  # logical CPUs it stands for; [None] for a package/board sensor


@dataclass
class Sources:
    frequency: str | None
    temperature: str | None
    notes: list[str] = field(default_factory=list)
    freq_files: dict[int, Path] = field(default_factory=dict)
    sensors: list[_TempSensor] = field(default_factory=list)


def _hwmon_sensors() -> tuple[str | None, list[_TempSensor]]:
    for hw in sorted(HWMON.glob("hwmon*")) if HWMON.is_dir() else []:
        name = _read(hw / "name")
        if name not in CPU_HWMON_DRIVERS:
            continue
        sensors = []
        package = None
        for inp in sorted(hw.glob("temp*_input")):
            label = _read(inp.with_name(inp.name.replace("_input", "_label"))) or ""
            m = re.match(r"Package id (\d+)", label)
            if m:
                package = int(m.group(1))
            m = re.match(r"Core (\d+)", label)
            cores: list[int | None] = [None]
            if m and name == "coretemp":
                core_id = int(m.group(1))
                matched = [c for c in _logical_cpus()
                           if _topology(c, "core_id") == core_id
                           and (package is None or _topology(c, "physical_package_id") == package)]
                cores = list(matched) or [None]
            sensors.append(_TempSensor(inp, cores))
        if sensors:
            return name, sensors
    return None, []


def detect() -> Sources:
    notes = []
    freq_files = {c: SYS_CPU / f"cpu{c}" / "cpufreq" / "scaling_cur_freq" for c in _logical_cpus()}
    freq_files = {c: p for c, p in freq_files.items() if p.exists()}
    if freq_files:
        frequency: str | None = "scaling_cur_freq"
    elif _read(PROC_CPUINFO) and "cpu MHz" in (_read(PROC_CPUINFO) or ""):
        frequency = "/proc/cpuinfo"
        notes.append("no cpufreq in sysfs: frequency from /proc/cpuinfo 'cpu MHz' (may be nominal under a hypervisor)")
    else:
        frequency = None
        notes.append("core frequency not exposed (no cpufreq, no 'cpu MHz' in /proc/cpuinfo)")
    driver, sensors = _hwmon_sensors()
    temperature = f"hwmon:{driver}" if driver else None
    if not sensors:
        zones = [z / "temp" for z in sorted(THERMAL.glob("thermal_zone*"))] if THERMAL.is_dir() else []
        zones = [z for z in zones if _read(z) is not None]
        if zones:
            temperature = "thermal_zone"
            sensors = [_TempSensor(z, [None]) for z in zones]
        else:
            notes.append("temperature not exposed (no CPU hwmon driver, no thermal zone)")
    return Sources(frequency, temperature, notes, freq_files, sensors)


def _cpuinfo_mhz() -> dict[int, float]:
    out: dict[int, float] = {}
    cpu = None
    for line in (_read(PROC_CPUINFO) or "").splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            cpu = int(value)
        elif key == "cpu MHz" and cpu is not None:
            try:
                out[cpu] = float(value) * 1e6
            except ValueError:
                pass
    return out


def sample(sources: Sources, host: str) -> list[dict[str, Any]]:
    now = time.monotonic()
    if sources.frequency == "scaling_cur_freq":
        freqs = {}
        for c, p in sources.freq_files.items():
            text = _read(p)
            if text and text.isdigit():
                freqs[c] = int(text) * 1e3  # kHz
    elif sources.frequency == "/proc/cpuinfo":
        freqs = _cpuinfo_mhz()
    else:
        freqs = {}
    rows: dict[int | None, dict[str, Any]] = {c: {"frequency_hz": f} for c, f in freqs.items()}
    extra = []
    for s in sources.sensors:
        text = _read(s.path)
        if not text or not text.lstrip("-").isdigit():
            continue
        temp = int(text) / 1000.0
        for c in s.cores:
            if c is not None:
                rows.setdefault(c, {})["temperature_c"] = temp
            else:
                extra.append({"temperature_c": temp})
    out = [dict(timestamp=now, host=host, core=c, **v) for c, v in sorted(rows.items(), key=lambda x: x[0] or 0)]
    out += [dict(timestamp=now, host=host, core=None, **v) for v in extra]
    return out


class Monitor:
    """Samples every `interval` seconds in a daemon thread between start() and stop()."""

    def __init__(self, interval: float = 1.0, host: str | None = None):
        self.interval = interval
        self.host = host or socket.gethostname()
        self.sources = detect()
        self.rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return bool(self.sources.frequency or self.sources.temperature)

    def start(self) -> "Monitor":
        if self.available and self.interval > 0:
            self._thread = threading.Thread(target=self._loop, name="hplsim-monitor", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.rows.extend(sample(self.sources, self.host))
            next_t += self.interval
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self.rows.extend(sample(self.sources, self.host))  # a last sample at the end
        return self.rows

    def describe(self) -> dict[str, Any]:
        return {"interval_s": self.interval if self._thread else None,
                "frequency": self.sources.frequency, "temperature": self.sources.temperature,
                "hosts": [self.host] if self._thread else [], "samples": len(self.rows),
                "note": "; ".join(self.sources.notes) or None}
