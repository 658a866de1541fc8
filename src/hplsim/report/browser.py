"""Open a report in headless Chromium, as a person would: the page after its figures are
drawn, what the console said, a screenshot. Used by the tests and the Gantt benchmark.

Chromium's command line is enough (no WebDriver): `--dump-dom` prints the DOM after the
scripts ran, `--screenshot` saves the window, and `--enable-logging=stderr` prints every
console message as an `INFO:CONSOLE` line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.processes import killed_on_failure, popen

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
_CONSOLE = re.compile(r":CONSOLE(?:\(\d+\)|:\d+)\]\s*(.*)")
# What the software GL renderer says about itself (not the page's doing).
_DRIVER_NOISE = re.compile(r"GL Driver Message|GPU stall due to ReadPixels")


@dataclass
class PageView:
    dom: str
    console: list[str]  # the page's console messages (the GL driver's own chatter left out)
    screenshot: Path | None

    def attribute(self, name: str) -> str | None:
        m = re.search(rf'<body[^>]*\b{name}="([^"]*)"', self.dom)
        return m.group(1) if m else None


def find_browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise HplsimError("no Chromium found: install Debian's chromium package (./bootstrap does)")


def open_page(page: Path, screenshot: Path | None = None, real_time_ms: int | None = None,
              size: tuple[int, int] = (1280, 4000), timeout: float = 180.0) -> PageView:
    """Load `page` headless. By default the browser fast-forwards idle time (virtual time)
    until the page is settled; `real_time_ms` instead waits that long in real time (for
    timing the page's own measurements)."""
    if not Path(page).is_file():
        raise HplsimError(f"{page}: no such page")
    argv = [find_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
            "--enable-logging=stderr", "--v=0", "--hide-scrollbars", f"--window-size={size[0]},{size[1]}",
            f"--timeout={real_time_ms}" if real_time_ms else "--virtual-time-budget=30000", "--dump-dom"]
    if screenshot is not None:
        argv.append(f"--screenshot={screenshot}")
    with tempfile.TemporaryDirectory(prefix="hplsim-chromium-") as profile:
        argv += [f"--user-data-dir={profile}", Path(page).resolve().as_uri()]
        # Its own session: Chromium's helper processes go with it if it must be killed.
        proc = popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     start_new_session=True)
        with killed_on_failure(proc, f"Chromium did not finish loading {page} within {timeout:g} s"):
            stdout, stderr = proc.communicate(timeout=timeout)
    console = [m.group(1) for line in stderr.splitlines() if (m := _CONSOLE.search(line))
               and not _DRIVER_NOISE.search(line)]
    if proc.returncode != 0 and not stdout:
        raise HplsimError(f"Chromium failed on {page}: {stderr.strip().splitlines()[-1:]}")
    return PageView(stdout, console, screenshot if screenshot and screenshot.exists() else None)
