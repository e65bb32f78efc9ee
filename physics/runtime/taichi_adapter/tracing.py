"""Cheaper tracing of the engine's kernels on taichi 1.7.4: four patches to its tracer.

Each acts on the engine's own functions only (ownership.py) and hands anything else to
Taichi's original, so a user's kernels trace, and report their errors, as without taigym.
"""

from __future__ import annotations

import ast as python_ast
import functools
import sys
import textwrap
import threading
import types
from importlib import import_module

from .ownership import owned_frame, owned_trace
from .patch import Patch

# --- error positions ---------------------------------------------------------------------


def _find_positions(ti):
    context = import_module(ti.__name__ + ".lang.ast.ast_transformer_utils").ASTTransformerContext
    runtime = import_module(ti.__name__ + ".lang.impl").get_runtime
    runtime().current_kernel  # noqa: B018
    return context, context.get_pos_info, runtime


def _apply_positions(ti, found):
    """For every syntax node it traces, Taichi 1.7.4 formats a source excerpt with a caret
    line, re-wrapped to 80 columns, to keep beside the node for error messages; on the step
    kernel's ~100,000 nodes that was a quarter of a warm start (~2.5 s). For the engine's
    functions the excerpt becomes the file, line, function and source line, which names the
    same place. The offline cache's keys do not include it, so compiled kernels stay valid."""
    context, original, runtime = found
    if getattr(original, "taigym", False):
        return

    def get_pos_info(self, node):
        owned = self.__dict__.get("_taigym_owned")
        if owned is None:  # one answer a traced function
            owned = self._taigym_owned = owned_trace(self.func, runtime())
        if not owned:
            return original(self, node)
        line = self.src[node.lineno - 1] if 0 < node.lineno <= len(self.src) else ""
        return f'File "{self.file}", line {node.lineno + self.lineno_offset}, in {self.func.func.__name__}:\n{line}\n'

    get_pos_info.taigym = True
    context.get_pos_info = get_pos_info


POSITIONS = Patch("error positions", "lang.ast.ast_transformer_utils.ASTTransformerContext.get_pos_info(self, node)"
                  " with self.src, self.file, self.lineno_offset and self.func.func; impl.get_runtime().current_kernel",
                  _find_positions, _apply_positions)

# --- sources read once -------------------------------------------------------------------


def _find_sources(ti):
    tracer = import_module(ti.__name__ + ".lang.kernel_impl")
    tracer.textwrap.fill, tracer.textwrap.dedent  # noqa: B018  (the reformatting it does)
    runtime = import_module(ti.__name__ + ".lang.impl").get_runtime
    runtime().current_kernel  # noqa: B018
    return tracer, tracer.getsourcelines, tracer.getsourcefile, runtime


def _apply_sources(ti, found):
    """Taichi inlines a ``@ti.func`` at every call site, and at every one it reads the
    function's source file again (``inspect.getsourcelines`` tokenizes the whole file) and
    re-wraps and dedents each of its lines: the step kernel's ~1,500 call sites spent about
    a third of a warm start's tracing there. The text of a function does not change while
    the process runs, so an engine function's is read and reformatted once (once per code
    object: the functions one factory makes share it), and the lines are kept between
    processes (source_cache.py)."""
    from ..source_cache import source_lines

    tracer, read_lines, read_file, runtime = found
    if getattr(read_lines, "taigym", False):
        return
    lines_of, file_of = {}, {}  # keyed by the function's code
    reading = threading.local()  # whether the function whose lines were read last is the engine's
    fill = functools.lru_cache(maxsize=None)(fill_source_line)
    dedent = functools.lru_cache(maxsize=None)(textwrap.dedent)

    def getsourcelines(obj):
        # Taichi reformats the lines it reads next: reading.owned says how
        reading.owned = owned_trace(obj, runtime())
        if not reading.owned:
            return read_lines(obj)
        key = getattr(obj, "__code__", obj)
        if key not in lines_of:
            lines_of[key] = source_lines(obj, read_lines)  # kept between processes too
        lines, start = lines_of[key]
        return list(lines), start  # a copy: the tracer may edit the list it is given

    def getsourcefile(obj):
        if not owned_trace(obj, runtime()):
            return read_file(obj)
        key = getattr(obj, "__code__", obj)
        if key not in file_of:
            file_of[key] = read_file(obj)
        return file_of[key]

    def fill_line(line, *args, **kwargs):
        owned = getattr(reading, "owned", False)
        return (fill if owned else textwrap.fill)(line, *args, **kwargs)

    def dedent_text(text):
        return (dedent if getattr(reading, "owned", False) else textwrap.dedent)(text)

    getsourcelines.taigym = True
    tracer.getsourcelines = getsourcelines
    tracer.getsourcefile = getsourcefile
    tracer.textwrap = types.SimpleNamespace(fill=fill_line, dedent=dedent_text)


def fill_source_line(line: str, tabsize: int = 4, width: int = 9999) -> str:
    """``textwrap.fill(line, tabsize=tabsize, width=width)``, which Taichi applies to each line
    of a traced function: for a line shorter than ``width`` whose only whitespace besides
    spaces is its closing newline, that is the line without its trailing spaces and newline
    (~12 µs a line less than textwrap's chunking)."""
    if len(line) >= width or any(c in line for c in "\t\r\x0b\x0c") or "\n" in line[:-1]:
        return textwrap.fill(line, tabsize=tabsize, width=width)
    return line.rstrip(" \n")


SOURCES = Patch("sources read once", "lang.kernel_impl's module names getsourcelines, getsourcefile and "
                "textwrap.fill/dedent, through which _get_tree_and_ctx reads a function", _find_sources, _apply_sources)

# --- each inlined function parsed once per kernel ----------------------------------------


def _find_parse(ti):
    tracer = import_module(ti.__name__ + ".lang.kernel_impl")
    tracer.ast.parse  # noqa: B018
    runtime = import_module(ti.__name__ + ".lang.impl").get_runtime
    runtime().current_kernel  # noqa: B018
    return tracer, tracer._get_tree_and_ctx, tracer.transform_tree, runtime


def _apply_parse(ti, found):
    """Taichi parses an inlined ``@ti.func``'s source anew at each of its call sites (~300 in
    a step kernel, ~0.04 s of a warm start). Tracing only reads a function's syntax tree
    (it notes each node's value on the node, and a later trace writes them again; the one
    note it looks for rather than writes, a method call's vector, is cleared), so an engine
    function's tree whose trace has ended is handed to the function's next call in the same
    kernel instead (the trees go when the kernel's trace ends: they hold every expression it
    noted, which would otherwise live, and be walked by every collection, until exit). A
    tree is lent to one trace at a time: a call made while the same source is being traced
    (a function that reaches itself through a real function) gets a tree of its own.
    Kernels and real functions, which Taichi edits while compiling, are parsed as before."""
    tracer, tree_and_ctx, transform_tree, runtime = found
    if getattr(tree_and_ctx, "taigym", False):
        return
    free = {}  # source -> its trees no trace holds, each with its method calls' callees
    lent = {}  # id(tree) -> (source, tree, callees), for the trees traces hold
    state = threading.local()

    def parse(source, *args, **kwargs):
        if args or kwargs or not getattr(state, "inlined", False):
            return python_ast.parse(source, *args, **kwargs)
        trees = free.get(source)
        if trees:
            tree, callees = trees.pop()
            for callee in callees:
                # Taichi marks a method call on a traced vector with the vector and looks
                # for the mark with hasattr; the call may be on a Python-side vector now
                callee.__dict__.pop("caller", None)
        else:
            tree = python_ast.parse(source)
            callees = [n.func for n in python_ast.walk(tree)
                       if isinstance(n, python_ast.Call) and isinstance(n.func, python_ast.Attribute)]
        lent[id(tree)] = (source, tree, callees)
        return tree

    def _get_tree_and_ctx(self, *args, **kwargs):
        state.inlined = (not kwargs.get("is_kernel", True) and not kwargs.get("is_real_function", False)
                         and not args and owned_trace(self, runtime()))
        try:
            return tree_and_ctx(self, *args, **kwargs)
        finally:
            state.inlined = False

    def _transform_tree(tree, ctx):
        state.depth = getattr(state, "depth", 0) + 1
        try:
            result = transform_tree(tree, ctx)  # a trace that fails keeps its tree
        finally:
            state.depth -= 1
            if state.depth == 0:
                # the kernel's trace is over: its trees hold every expression it noted,
                # which would otherwise live (and be walked by each collection) until exit
                free.clear()
                lent.clear()
        source, _, callees = lent.pop(id(tree), (None, None, None))
        if source is not None:
            free.setdefault(source, []).append((tree, callees))
        return result

    _get_tree_and_ctx.taigym = True
    names = {name: getattr(python_ast, name) for name in dir(python_ast) if not name.startswith("__")}
    tracer.ast = types.SimpleNamespace(**{**names, "parse": parse})
    tracer._get_tree_and_ctx = _get_tree_and_ctx
    tracer.transform_tree = _transform_tree


PARSE_ONCE = Patch("inlined functions parsed once", "lang.kernel_impl's _get_tree_and_ctx(self, ..., is_kernel, "
                   "is_real_function) parsing through the module name ast, and transform_tree(tree, ctx)",
                   _find_parse, _apply_parse)

# --- "is this decorator inside a class?" answered once a place -------------------------------


def _find_class_check(ti):
    decorators = import_module(ti.__name__ + ".lang.kernel_impl")
    patterns = decorators._KERNEL_CLASS_STACKFRAME_STMT_RES
    if not all(hasattr(p, "match") for p in patterns):
        raise AttributeError("_KERNEL_CLASS_STACKFRAME_STMT_RES holds no patterns")
    return decorators, decorators._inside_class, patterns


def _apply_class_check(ti, found):
    """Each ``@ti.func`` Taichi decorates reads the source line of the frame that applies the
    decorator, to see whether it sits in a class (``inspect.getframeinfo``: ~0.3 ms a call,
    most of it mapping the frame's file to a module by scanning every loaded module). For
    a frame in the engine's modules the line is read from ``linecache`` directly, as
    ``getframeinfo`` reads it in the end, and the answer, fixed by the frame's code and
    instruction, is kept: the table accessors (physics/access.py) are all decorated at a
    dozen such places. Taichi's own modules imported after the runtime starts (its matrix
    operations, imported when first used) are answered so too: the same line, found without
    the scan. A user's decorations go through Taichi's own check."""
    decorators, inside_class, patterns = found
    if getattr(inside_class, "taigym", False):
        return
    quick = quick_inside_class(patterns)
    answers = {}
    own = ti.__name__ + "."  # Taichi's own modules, some imported lazily while a World is built

    def _inside_class(level_of_class_stackframe):
        try:
            frame = sys._getframe(level_of_class_stackframe)
            applying = sys._getframe(level_of_class_stackframe - 1)  # where the decorator is applied
        except ValueError:
            return inside_class(level_of_class_stackframe + 1)  # + 1: this frame
        if not (owned_frame(applying) or applying.f_globals.get("__name__", "").startswith(own)):
            return inside_class(level_of_class_stackframe + 1)
        place = (frame.f_code, frame.f_lasti)
        if place not in answers:
            answers[place] = quick(level_of_class_stackframe + 1)
        return answers[place]

    _inside_class.taigym = True
    decorators._inside_class = _inside_class


def quick_inside_class(patterns):
    """``_inside_class`` for Taichi's statement ``patterns``: whether the line of the frame
    ``level_of_class_stackframe`` levels up (counted as Taichi counts them) opens a class or
    is ``@data_oriented``, read through ``linecache``."""
    import linecache

    def _inside_class(level_of_class_stackframe):
        try:
            frame = sys._getframe(level_of_class_stackframe)
        except ValueError:
            return False
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        return any(pattern.match(line) for pattern in patterns)

    return _inside_class


CLASS_CHECK = Patch("class check once a place", "lang.kernel_impl's _inside_class(level_of_class_stackframe) "
                    "matching _KERNEL_CLASS_STACKFRAME_STMT_RES against the decorating frame's line",
                    _find_class_check, _apply_class_check)
