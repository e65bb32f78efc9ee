"""Check that taigym's dependencies resolve to binary wheels for the Pythons and platforms
it claims (3.10 and 3.14 on Linux x86_64 and aarch64, macOS arm64, Windows).

pip evaluates environment markers against the interpreter it runs in, not the target of
``--python-version``, so this script evaluates the markers of pyproject.toml for each target
itself and hands pip the requirements that apply there. ``pip install --dry-run`` resolves
as ``pip download`` does, fetching wheel metadata only. The extras are checked on Linux
x86_64, where the tests run.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = {  # name -> (marker values, pip --platform tags)
    "linux-x86_64": ({"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
                     [f"manylinux_2_{v}_x86_64" for v in (28, 27, 17)] + ["manylinux2014_x86_64"]),
    "linux-aarch64": ({"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
                      [f"manylinux_2_{v}_aarch64" for v in (34, 28, 27, 17)] + ["manylinux2014_aarch64"]),
    "macos-arm64": ({"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
                    ["macosx_14_0_arm64"]),
    "windows-amd64": ({"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
                      ["win_amd64"]),
}
PYTHONS = ("3.10", "3.14")
EXTRAS = ("train", "dev", "quadrants")


def requirements(python: str, platform: str, extras: tuple[str, ...]) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = {**PLATFORMS[platform][0], "python_version": python, "python_full_version": python + ".0",
           "implementation_name": "cpython", "platform_python_implementation": "CPython", "os_name":
           "nt" if platform.startswith("windows") else "posix"}
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    out = []
    for line in lines:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env):
            req.marker = None
            out.append(str(req))
    return out


def resolves(python: str, platform: str, extras: tuple[str, ...]) -> tuple[bool, str]:
    reqs = requirements(python, platform, extras)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
               "--only-binary=:all:", "--python-version", python, "--target", tmp, *reqs]
        for tag in PLATFORMS[platform][1]:
            cmd += ["--platform", tag]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    return proc.returncode == 0, "; ".join(errors[-2:])


def main() -> int:
    cases = [(py, plat, ()) for py in PYTHONS for plat in PLATFORMS]
    cases += [(py, "linux-x86_64", EXTRAS) for py in PYTHONS]
    failed = 0
    for python, platform, extras in cases:
        ok, why = resolves(python, platform, extras)
        failed += not ok
        what = f"taigym[{','.join(extras)}]" if extras else "taigym"
        print(f"{'ok  ' if ok else 'FAIL'} {what} on Python {python}, {platform}" + ("" if ok else f": {why}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
