"""Which module describes the running Taichi: what the adapter installs for it."""


def implementation(ti):
    """taichi_174 for ``taichi``, quadrants for the fork: each has ``PATCHES``, the patches
    to install, ``LAUNCH_REUSE``, whether launch.py may keep launch contexts, and ``GRAPHS``,
    whether it compiles graph kernels (graphs.py)."""
    if ti.__name__ == "taichi":
        from . import taichi_174 as module
    else:
        from . import quadrants as module
    return module
