"""The one place the engine imports Taichi.

Two Taichis carry the API the engine is written in (Taichi 1.7's): ``taichi`` 1.7.4 itself
(the default where it installs: Python 3.10-3.13) and the maintained fork ``quadrants``
(Python 3.14, and an opt-in extra elsewhere). ``TAIGYM_TAICHI=taichi|quadrants`` picks one
when both are installed; otherwise the first that imports, in that order. Every engine
module takes ``ti`` from here (most through backend.py, which starts its runtime), so the
choice is made once per process. The patches to Taichi (taichi_adapter/) take it from
here, below the runtime that installs them.
"""

from __future__ import annotations

import importlib

from .. import settings as _settings

TAICHIS = ("taichi", "quadrants")  # import names, in order of preference


def _import_taichi():
    wanted = _settings.current().taichi
    missing = []
    for name in (wanted,) if wanted else TAICHIS:
        try:
            return importlib.import_module(name)
        except ImportError as error:
            missing.append(f"{name} ({error})")
    raise ImportError("taigym needs Taichi: none of " + ", ".join(missing) + " imports; "
                      "pip install taichi (Python 3.10-3.13) or quadrants")


ti = _import_taichi()
NAME = ti.__name__  # "taichi" or "quadrants"
VERSION = ".".join(map(str, ti.__version__))


def current_cfg():
    """The running program's compile configuration (arch, optimization switches, threads)."""
    return ti.lang.impl.current_cfg()


def default_cfg():
    """The compile configuration ``ti.init`` starts from (it names every setting)."""
    return ti.lang.impl.default_cfg()
