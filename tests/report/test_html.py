"""report.html opens in a real browser (headless Chromium): the charts are in the DOM,
the page logs nothing to the console (Chromium reports malformed SVG attributes there)
and the charts are actually drawn. Skipped where Chromium is not installed (CI may not
have it: apt-get install chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from orchestrator.report.build import write_report
from orchestrator.report.svg import BLUE, LOSS, WIN
from tests.report.synth import write_run
from tests.report.test_known_counts import PLAYERS, SPRT, games

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)"
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", *args],
        capture_output=True, text=True, timeout=120,
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("html")
    run_dir = write_run(root / "rec", "known-20260101-000000", games(), PLAYERS,
                        ("alpha", "beta"), SPRT)
    write_report([run_dir], root / "out")
    return root / "out" / "report.html"


def test_page_is_self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"<(script|link|img|iframe)\b", text)
    assert not re.search(r"\bsrc=", text)
    # the only links are the per-game table's, to each SGF, relative to the report
    links = re.findall(r'href="([^"]*)"', text)
    assert len(links) == 11
    assert all(link.startswith("../rec/known-20260101-000000/") and link.endswith(".sgf")
               for link in links)
    assert (page.parent / links[-1]).resolve().is_file()
    assert "@import" not in text and "url(" not in text


def test_dom_has_the_charts_and_console_is_silent(page: Path, tmp_path: Path) -> None:
    result = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    # Elo and LLR curves, colours, lengths, margins, terminations, fallbacks by reason and
    # over the run, latency bars and distribution
    assert dom.count("<svg") == 10
    for title in ("Elo of alpha", "log-likelihood ratio", "Results by colour",
                  "Game length", "Margin of victory", "How games ended",
                  "Fallbacks by reason", "Fallbacks per move asked over the run",
                  "Reply latency per player", "Reply latency distribution"):
        assert re.search(f"<title>[^<]*{title}", dom), title
    assert dom.count('class="rule"') == 2  # the SPRT bounds
    assert dom.index('class="verdict') < dom.index("<svg")  # the verdict comes first
    assert dom.count('class="ci-band"') == 1 and dom.count('class="elo-line"') == 1
    assert dom.count('class="bar"') >= 10
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_charts_are_drawn(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    result = chromium(tmp_path, "--window-size=800,4000", f"--screenshot={shot}", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    colors = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    counts = {rgb: n for n, rgb in colors}

    def pixels(hex_color: str) -> int:
        rgb = tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
        return counts.get(rgb, 0)

    # the Elo line and length bars (blue), wins (green) and losses (red) are painted
    assert pixels(BLUE) > 500 and pixels(WIN) > 500 and pixels(LOSS) > 500


def test_markdown_code_reads_as_code(page: Path) -> None:
    """The verdict box and the move-quality hint name a command in backticks in the
    Markdown; in the HTML it is code, not raw backticks."""
    text = page.read_text()
    assert "<code>go19 review RUN_DIR</code>" in text
    body = text[text.index("<body>"):]
    assert "`" not in re.sub(r"<svg.*?</svg>", "", body)


def test_the_page_fits_a_phone(page: Path) -> None:
    """At 390×844 on a phone (Chromium's mobile emulation) the page is laid out at the
    screen's width, not at a desktop's 980 px shrunk, and nothing scrolls the page
    sideways: wide tables and charts scroll in their own box."""
    from tests.web.harness import _missing, headless_chromium

    if _missing():
        pytest.skip(_missing())
    with headless_chromium(390, 844) as chrome:
        chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
        chrome.get(page.as_uri())
        width, scroll = chrome.execute_script(
            "return [window.innerWidth, document.documentElement.scrollWidth]")
        widest = chrome.execute_script(
            "return Math.max(...[...document.querySelectorAll('table, svg')]"
            ".map(e => e.getBoundingClientRect().right))")
    assert width == 390
    assert scroll <= 390 and widest <= 390
