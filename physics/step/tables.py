"""The step kernels' table parameters, written from the one declaration of their tables.

physics/layout.py declares every table the step kernels take (KERNEL_TABLES). Taichi reads
a kernel's parameters from its signature and its body from its source text, so a kernel
cannot take "the declared tables" as one parameter: the fused step kernel, the staged one
and the outlined stages' real function are written as templates with one parameter
annotated :data:`TABLES`, and :func:`with_tables` writes each out again with that parameter
replaced by one typed parameter per declared table, in order, and a first statement that
gathers them into one namedtuple under the parameter's name. The arrays go down to the
stages as that object, fixed while tracing (``ti.static``: no kernel variable), and the
body is the template's, unchanged.

The text written is a function of the template's source and the declaration alone, and
Taichi keys its offline cache on the syntax it traces, so every process writes, and finds,
the same kernel.
"""

from __future__ import annotations

import ast
import collections
import functools
import hashlib
import inspect
import linecache
import textwrap
import types

from .. import layout as L
from ..runtime.backend import ti


class _Tables:
    def __repr__(self):
        return "TABLES"


# The annotation of a template's parameter that stands for every declared table
TABLES = _Tables()
_TYPE = "_step_tables_type"  # the name the written text gives the namedtuple type


@functools.lru_cache(maxsize=None)
def _tables_type(fp, declared: tuple):
    Tables = collections.namedtuple("StepTables", [t.name for t in declared])
    Tables._declared = declared
    Tables._annotations = {t.name: ti.types.ndarray(dtype=ti.i32 if t.dtype == L.INT else fp, ndim=t.ndim)
                           for t in declared}
    return Tables


def step_tables(fp):
    """The namedtuple type ``StepTables`` the step kernels hand their tables down as: the
    tables layout.KERNEL_TABLES declares now, in order, ``fp`` being the float tables'
    precision. Typed array parameters let LLVM see each table's element type and rank:
    accesses ran ~2x faster than through untyped ndarray arguments."""
    return _tables_type(fp, L.kernel_tables())


def with_tables(Tables):
    """Decorator under ``@ti.kernel`` or ``@ti.real_func``: the template function as one
    taking the tables of ``Tables`` (a :func:`step_tables` type) in place of its parameter
    annotated :data:`TABLES`, which its body reads as that namedtuple."""

    def write(template):
        return _written(template, Tables)

    return write


def _written(template, Tables):
    parameters = inspect.signature(template).parameters.values()
    marked = [p.name for p in parameters if p.annotation is TABLES]
    if len(marked) != 1:
        raise TypeError(f"{template.__qualname__}: one parameter annotated TABLES, not {len(marked)}")
    name = marked[0]
    clash = set(Tables._fields) & {p.name for p in parameters if p.name != name}
    if clash:
        raise TypeError(f"{template.__qualname__}: parameters {sorted(clash)} are declared tables")
    free = template.__code__.co_freevars
    if _TYPE in free:
        raise TypeError(f"{template.__qualname__} uses the name {_TYPE}")
    text = _text(template, name, Tables._declared, free)
    # a name of its own for each text, so that no function's lines are replaced; <...>
    # keeps linecache from reading a file of that name
    filename = f"<taigym {template.__qualname__} {hashlib.sha1(text.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # no mtime: kept
    # written inside a function whose locals are the template's free variables, so that it
    # takes the template's own cells (names its enclosing function binds later resolve as
    # they would in the template); annotations stay unevaluated and are set below
    scope = compile(text, filename, "exec", dont_inherit=True)
    outer = next(c for c in scope.co_consts if isinstance(c, types.CodeType))
    code = next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == template.__name__)
    cells = dict(zip(free, template.__closure__ or ()))
    cells[_TYPE] = types.CellType(Tables)
    function = types.FunctionType(code, template.__globals__, template.__name__, template.__defaults__,
                                  tuple(cells[v] for v in code.co_freevars))
    function.__kwdefaults__ = template.__kwdefaults__
    function.__qualname__, function.__doc__ = template.__qualname__, template.__doc__
    annotations = {}
    for parameter in parameters:
        if parameter.name == name:
            annotations.update(Tables._annotations)
        elif parameter.annotation is not inspect.Parameter.empty:
            annotations[parameter.name] = parameter.annotation
    function.__annotations__ = annotations
    return function


def _text(template, name: str, declared: tuple, free: tuple) -> str:
    """The template's source with parameter ``name`` written out as the ``declared`` tables
    and the namedtuple made first thing, inside a function binding ``free`` and the type."""
    lines = textwrap.dedent(inspect.getsource(template)).splitlines()
    definition = ast.parse("\n".join(lines)).body[0]
    body = definition.body
    first = body[1] if len(body) > 1 and _docstring(body[0]) else body[0]
    fields = ", ".join(t.name for t in declared)
    lines.insert(first.lineno - 1, f"{' ' * first.col_offset}{name} = ti.static({_TYPE}({fields}))")
    arg = next(a for a in definition.args.args if a.arg == name)
    if arg.lineno != arg.end_lineno:
        raise TypeError(f"{template.__qualname__}: write the TABLES parameter on one line")
    # one parameter per table, typed i1 .. f3 as the text says (the annotations are set apart)
    written, row = [], ""
    for t in declared:
        parameter = f"{t.name}: {'i' if t.dtype == L.INT else 'f'}{t.ndim}"
        if row and len(row) + len(parameter) + 2 > 112 - arg.col_offset:
            written.append(row + ",")
            row = ""
        row += (", " if row else "") + parameter
    written.append(row)
    line = lines[arg.lineno - 1]
    lines[arg.lineno - 1: arg.lineno] = (line[: arg.col_offset] + ("\n" + " " * arg.col_offset).join(written)
                                         + line[arg.end_col_offset:]).split("\n")
    function = "\n".join("    " + line if line else line for line in lines[definition.lineno - 1:])
    scope = " = ".join((*free, _TYPE)) + " = None"
    return (f"from __future__ import annotations\n\n\ndef _with_tables():\n    {scope}\n\n{function}\n"
            f"    return {template.__name__}\n")


def _docstring(statement) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))
