"""A real headless Chromium for the HTML report's tests: the DOM it builds and the screenshot it draws,
with the network closed (any host fails to resolve, any proxied request goes nowhere).

Debian's `chromium` package (`scripts/setup.sh --dev` installs it where it runs as root with apt-get).
Where it is missing, tests fail there (setup should have installed it) and are skipped elsewhere.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_OFFLINE = (
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)


def chromium() -> str:
    """The browser's path; fails or skips the test, saying why, when there is none."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is not None:
        return found
    setup_installs = os.geteuid() == 0 and Path("/etc/debian_version").is_file() and shutil.which("apt-get")
    reason = f"no Chromium on PATH (looked for {', '.join(NAMES)})"
    if setup_installs:
        pytest.fail(f"{reason}: scripts/setup.sh --dev installs it here (apt-get install -y chromium)")
    pytest.skip(f"{reason}; install Debian's chromium package to run the browser tests")


def _run(page: Path, profile: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",  # its own profile: parallel tests must not share one
        *_OFFLINE,
        *options,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed: {done.stderr[-2000:]}"
    return done


def dump_dom(page: Path, profile: Path) -> str:
    """The page's DOM as Chromium serializes it once the page has loaded (its scripts run)."""
    return _run(page, profile, "--dump-dom").stdout


def screenshot(page: Path, png: Path, profile: Path, size: tuple[int, int] = (1200, 1600)) -> Path:
    _run(page, profile, f"--screenshot={png}", f"--window-size={size[0]},{size[1]}")
    assert png.is_file(), f"Chromium wrote no screenshot of {page}"
    return png


def png_colours(png: Path) -> set[tuple[int, int, int]]:
    """The distinct RGB colours of an 8-bit, non-interlaced RGB or RGBA PNG (as Chromium writes them)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"{png}: a PNG layout this reader lacks"
    step = 3 if colour == 2 else 4
    rows = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8).reshape(height, width * step + 1)
    image = np.zeros((height, width * step), dtype=np.uint8)
    previous = np.zeros(width * step, dtype=np.uint8)
    for number, (kind, line) in enumerate(zip(rows[:, 0], rows[:, 1:], strict=True)):
        image[number] = previous = _unfilter(int(kind), line, previous, step)
    pixels = image.reshape(height * width, step)[:, :3].astype(np.uint32)
    packed = np.unique(pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2])
    return {(int(p >> 16), int(p >> 8 & 0xFF), int(p & 0xFF)) for p in packed}


def _unfilter(kind: int, line: np.ndarray, previous: np.ndarray, step: int) -> np.ndarray:
    """One scanline without its PNG filter (0 none, 1 sub, 2 up, 3 average, 4 Paeth)."""
    if kind == 0:
        return line
    if kind == 1:
        return (line.reshape(-1, step).astype(np.int64).cumsum(axis=0) % 256).astype(np.uint8).reshape(-1)
    if kind == 2:
        summed: np.ndarray = line + previous  # uint8: wraps modulo 256, as the filter does
        return summed
    out, up = [0] * len(line), previous.tolist()
    for i, value in enumerate(line.tolist()):
        left = out[i - step] if i >= step else 0
        corner = up[i - step] if i >= step else 0
        if kind == 3:
            guess = (left + up[i]) // 2
        else:
            estimate = left + up[i] - corner
            distances = (abs(estimate - left), abs(estimate - up[i]), abs(estimate - corner))
            guess = (left, up[i], corner)[distances.index(min(distances))]
        out[i] = (value + guess) & 0xFF
    return np.array(out, dtype=np.uint8)
