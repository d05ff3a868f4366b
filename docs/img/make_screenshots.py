"""Regenerate the screenshots in this folder (the README links them):

    .venv/bin/python docs/img/make_screenshots.py [REPORT_HTML]

The dashboard is rendered from tests/collect/dashboard_scene.py (a run caught mid-way:
one replica down, one slow, a burst of superko fallbacks) with rich's recording
console at 80x24 and 160x50, exported as SVG and photographed by headless Chromium.
With REPORT_HTML, the report's first screen is photographed too."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from orchestrator.collect.dashboard import Dashboard  # noqa: E402
from tests.collect.dashboard_scene import scene  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def shoot(url: str, out: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={width},{height}",
             f"--screenshot={out}", url],
            check=True, capture_output=True, timeout=120)


def dashboard(width: int, height: int) -> None:
    console = Console(record=True, width=width, height=height, force_terminal=True,
                      color_system="truecolor", file=open("/dev/null", "w"))  # noqa: SIM115
    collector = scene()
    dash = Dashboard(console, collector.recent)
    dash.attach(collector)
    console.print(dash.render())
    svg = console.export_svg(title=f"go19 collect — {width}x{height}")
    w, h = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    page = HERE / f".dashboard-{width}x{height}.html"
    page.write_text(f'<html><body style="margin:0;background:#fff">{svg}</body></html>')
    shoot(page.as_uri(), HERE / f"dashboard-{width}x{height}.png", int(w), int(h))
    page.unlink()


if __name__ == "__main__":
    dashboard(80, 24)
    dashboard(160, 50)
    if len(sys.argv) > 1:
        shoot(Path(sys.argv[1]).resolve().as_uri(), HERE / "report-first-screen.png", 1280, 900)
