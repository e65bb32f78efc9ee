"""Every registered step term (observation, reward, termination) has exactly one definition:
its World-program instructions (``Term.ops``). Checked twice: in the source, each step
factory's ``Term(...)`` gives ``ops`` and no function beside it; and at run time, each step
term bound by a shipped task carries ``ops`` and no ``fn``. The one exception is the
``camera`` observation, whose frames the env renders after the step: its Term gives only
a ``view``."""

import ast
import inspect
import textwrap

import pytest
from taigym.tasks import registry
from taigym.tasks.loader import CONFIG_DIR
from taigym.tasks.task import Task

STEP_KINDS = ("observation", "reward", "termination")
STEP_TERMS = [(kind, name) for kind in STEP_KINDS for name in registry.names(kind)]
SHIPPED = sorted(p.name for p in (CONFIG_DIR / "tasks").glob("[!_]*.yaml"))


def _term_calls(factory, seen=None):
    """The ``Term(...)`` calls of ``factory`` and of the module functions it calls (a factory
    may build its Term in a shared helper)."""
    seen = set() if seen is None else seen
    seen.add(factory)
    tree = ast.parse(textwrap.dedent(inspect.getsource(factory)))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    out = [c for c in calls if getattr(c.func, "id", None) == "Term"]
    module = inspect.getmodule(factory)
    for c in calls:
        helper = getattr(module, getattr(c.func, "id", "") or "", None)
        if inspect.isfunction(helper) and helper not in seen and inspect.getmodule(helper) is module:
            out += _term_calls(helper, seen)
    return out


def test_the_registry_lists_the_step_terms():
    assert len(STEP_TERMS) >= 40
    assert {"qpos", "forward_velocity", "alive", "qpos_out_of_range"} <= {name for _, name in STEP_TERMS}


@pytest.mark.parametrize("kind, name", STEP_TERMS)
def test_a_step_term_is_defined_once_by_its_instructions(kind, name):
    calls = _term_calls(registry.get(kind, name).factory)
    assert calls, f"{kind} {name!r} builds no Term"
    for call in calls:
        keywords = {k.arg for k in call.keywords}
        assert not call.args, f"{kind} {name!r}: Term() given a positional function beside its ops"
        if keywords == {"view"}:  # frames (tasks/terms/camera.py), rendered by the env
            continue
        assert "ops" in keywords and "fn" not in keywords, f"{kind} {name!r}: Term({sorted(keywords)})"


@pytest.mark.parametrize("config", SHIPPED)
def test_bound_step_terms_carry_only_their_instructions(config):
    task = Task.from_source(str(CONFIG_DIR / "tasks" / config))
    terms = task._step_terms()
    assert terms
    for path, term in terms:
        assert term.fn is None and callable(term.ops), f"{config} {path}"


def test_every_registered_step_term_is_used_by_a_shipped_task():
    # so that the run-time check above covers each one, and the env tests step it
    used = set()
    for config in SHIPPED:
        task = Task.from_source(str(CONFIG_DIR / "tasks" / config))
        for path, _ in task._step_terms():
            node = task.config
            for key in path:
                node = node[key] if isinstance(key, int) else getattr(node, key)
            used.add(node.term)
    unused = sorted({name for _, name in STEP_TERMS} - used)
    assert len(unused) <= len(STEP_TERMS) // 3, f"step terms no shipped task uses: {unused}"
