"""Every third-party module the tests and the package import is installed by a requirement
the README names: taigym's own dependencies or its dev and train extras. A module present
only because some other project put it on this machine would pass here and fail on a user's."""

import importlib.metadata
import sys
from pathlib import Path

from conftest import imported_modules
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
LOCAL = {"taigym"} | {path.stem for path in (REPO / "tests").glob("*.py")}  # the tests import each other
DECLARED_EXTRAS = {"dev", "train", "quadrants", "bench", "ray"}


def _declared() -> set[str]:
    names = set()
    for line in importlib.metadata.requires("taigym") or []:
        req = Requirement(line)
        extra_ok = req.marker is None or "extra" not in str(req.marker) or any(
            req.marker.evaluate({"extra": extra}) for extra in DECLARED_EXTRAS)
        if extra_ok:
            names.add(req.name.lower().replace("_", "-"))
    return names


def test_every_imported_module_comes_from_a_declared_requirement():
    sources = [*(REPO / "tests").glob("*.py")]
    sources += [p for folder in ("physics", "envs", "tasks", "scripts", "taigym") for p in (REPO / folder).rglob("*.py")]
    imported = set().union(*map(imported_modules, sources)) - LOCAL - set(sys.stdlib_module_names)
    imported -= {"physics", "envs", "tasks", "scripts", "configs"}  # the repository's own folders
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = {}
    for module in sorted(imported):
        # a module of an optional extra may not be installed here: then its distribution
        # is taken to carry its name (envpool)
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not dists & declared:
            undeclared[module] = sorted(dists) or "not installed"
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
