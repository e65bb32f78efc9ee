"""Write the rough terrain of TaiGym/QuadrupedRough-v0 as a grey PNG height field.

    python scripts/make_terrain.py            # configs/assets/rough_terrain.png

Smooth random bumps (three octaves of bilinearly interpolated value noise from a fixed
seed, so the file is the same on every machine) around a flat pad at the centre, where
the robot starts; the roughness ramps in between 0.6 m and 1.2 m from the centre. The
image's top row is the terrain's +y edge, as MuJoCo reads PNG height fields.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from taigym.scripts.arguments import ArgumentParser

REPO_ROOT = Path(__file__).resolve().parents[1]
SIZE = 101  # samples per side
RADIUS = 5.0  # [m] half the side, as the asset's hfield size
PAD, RAMP = 0.6, 1.2  # [m] flat within PAD of the centre, fully rough beyond RAMP


def value_noise(rng: np.random.Generator, cells: int, size: int) -> np.ndarray:
    """(size, size) noise in [-1, 1]: a (cells + 1)^2 random lattice, bilinearly interpolated."""
    lattice = rng.uniform(-1, 1, (cells + 1, cells + 1))
    u = np.linspace(0, cells, size)
    i = np.minimum(u.astype(int), cells - 1)
    f = u - i
    rows = lattice[i] * (1 - f)[:, None] + lattice[i + 1] * f[:, None]
    return rows[:, i] * (1 - f) + rows[:, i + 1] * f


def rough_terrain(seed: int = 0) -> np.ndarray:
    """(SIZE, SIZE) heights in [0, 1], row 0 at -y."""
    rng = np.random.default_rng(seed)
    height = sum(amp * value_noise(rng, cells, SIZE) for cells, amp in ((10, 0.6), (25, 0.3), (50, 0.1)))
    x = np.linspace(-RADIUS, RADIUS, SIZE)
    r = np.hypot(*np.meshgrid(x, x))
    blend = np.clip((r - PAD) / (RAMP - PAD), 0, 1)
    height = (height - height.min()) / (height.max() - height.min())
    return height * blend  # the pad sits at the lowest level


def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "configs" / "assets" / "rough_terrain.png")
    args = p.parse_args(argv)
    from taigym.physics.render.png import write_png_grey

    heights = rough_terrain(args.seed)
    write_png_grey(args.out, np.round(heights[::-1] * 255).astype(np.uint8))  # top row = +y
    print(f"wrote {args.out} ({SIZE}x{SIZE} samples over {2 * RADIUS:g} m)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
