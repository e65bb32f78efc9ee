"""Named access to the packed tables, generated from their descriptions in physics/layout.py.

For every column of every table there is a reader named after it (the table's prefix +
the column's name: ``body_xpos``, ``dof_qfrc_bias``, ``efc_state``) and a writer
(``set_body_xpos``); columns wider than one also get element access (``body_xpos_at``,
``set_body_xpos_at``). A reader returns a scalar, a vector of the column's width or, for
a 3x3 column, a matrix. The arguments follow how the table is indexed (layout.FLAT,
FLAT_SHARED, ROWS, ROW, ENTRIES):

- flat tables, ``(table, o, r)``: row ``r`` of the row set starting at entry ``o``
  (``m.env_start`` for data tables, ``m.row_set`` for float model tables);
- shared flat tables, ``(table, r)``;
- 3-D tables, ``(table, s, r)``: set ``s`` (the env, or its model row set), row ``r``;
- 2-D tables, ``(table, r)``;
- 1-D tables of one row (the renderer's scene), ``(table)``.

A stage that works on a column it is given (a solve in place, a vector copy) takes the
column's accessor name as a template argument and looks the functions up in ``read`` and
``write`` (``get, put = ti.static(A.read[col], A.write[col])``), and the width of its
table's rows in ``row_width``.

The accessors are ``@ti.func``s, inlined where they are called: each compiles to the
index arithmetic that a kernel would otherwise spell out (the row's start plus a
constant column), so naming a column costs nothing at run time. Where Taichi's tracer
allows (physics/runtime/taichi_adapter/expansion.py, ``traced_access``), they are Python functions that
build that index and its load or store directly while the kernel is traced: the same
code, for a fraction of the tracing and compiling.
"""

import functools

from . import layout as L
from .runtime.lanes import env_index, table_lanes
from .runtime.backend import ti
from .runtime.taichi_adapter import traced_access
from .runtime.ti_math import flat_entry as _entry


@functools.cache
def make_access(fp):
    """Every table's accessors, for float type ``fp``, in one namespace: expanded where
    they are called wherever this process's Taichi allows it."""
    return Access(fp, traced_access())


class Access:
    """The accessors of every table column, made on first use: decorating a ``@ti.func``
    costs Taichi a look at its caller's source (~0.2 ms), and a kernel uses a few hundred
    of the ~2,000 accessors, so making them all up front would add ~0.4 s to every start."""

    def __init__(self, fp, traced=None):
        self._fp = fp
        self._traced = traced  # launch.TracedAccess: expanded where called; None: @ti.funcs
        self._columns = {}  # accessor name -> (table, column)
        for table in L.TABLES:
            for col in table.columns.values():
                for suffix in ("*", "set_*") + (("*_at", "set_*_at") if col.width > 1 else ()):
                    key = suffix.replace("*", table.prefix + col.name)
                    if key in self._columns:
                        raise ValueError(f"two table columns give the accessor {key!r}")
                    self._columns[key] = (table, col)
            if table.tail is not None:
                for suffix in ("*_at", "set_*_at"):
                    self._columns[suffix.replace("*", table.prefix + table.tail.name)] = (table, table.tail)
        self.read = _Lookup(self, "")
        self.write = _Lookup(self, "set_")
        self.row_width = {key: table.width for key, (table, _) in self._columns.items()}

    def names(self) -> list:
        """Every accessor's name."""
        return list(self._columns)

    def __getattr__(self, key):
        if key.startswith("_") or key not in self._columns:
            raise AttributeError(f"no table column has the accessor {key!r}")
        table, col = self._columns[key]
        elem = ti.i32 if table.dtype == "int" else self._fp
        name = table.prefix + col.name
        for suffix, func in _column_access(table, col, elem, self._traced).items():
            func.__name__ = func.__qualname__ = suffix.replace("*", name)
            setattr(self, func.__name__, func)  # found directly from now on
        return self.__dict__[key]


class _Lookup:
    """``A.read[name]`` / ``A.write[name]``: a column's reader or writer by its accessor name."""

    def __init__(self, access, prefix):
        self._access, self._prefix = access, prefix

    def __getitem__(self, name):
        return getattr(self._access, self._prefix + name)


def _column_access(table, col, elem, traced):
    if col is table.tail:
        # entries past the columns, one at a time: a column of one entry's element access
        tail = _column_access(table, col._replace(width=2), elem, traced)
        return {k: v for k, v in tail.items() if k.endswith("_at")}
    vtype = None
    if len(col.shape) == 2:
        vtype = ti.types.matrix(*col.shape, elem)
    elif col.shape:
        vtype = ti.types.vector(col.width, elem)
    index = table.index
    if table_lanes() > 1 and table.name in L.FLAT_TABLES + L.ENV_TABLES:
        # per-env data interleaved (physics/runtime/lanes.py; fixed per process); env-major keeps
        # the plain accessors, the very same code as before the layout existed
        index = _INTERLEAVED[index]
    if traced is not None:
        funcs = _expanded(traced, index, table.width, col.start, col.width, vtype, len(col.shape) == 2)
    else:
        make = {L.FLAT: _flat, FLAT_DATA: _flat_data, L.FLAT_SHARED: _flat_shared, L.ROWS: _rows, L.ROW: _row,
                L.ENTRIES: _entries, ROWS_DATA: _rows_data, ROW_DATA: _row_data}
        funcs = make[index](table.width, col.start, col.width, vtype, len(col.shape) == 2)
    return {k: v for k, v in funcs.items() if col.width > 1 or not k.endswith("_at")}


# Each maker below returns the four accessors of one column: "*" (read), "set_*" (write)
# and, for columns wider than one, "*_at" and "set_*_at" (entry k). A matrix column holds
# its entries row-major: entry k is (k // cols, k % cols). A reader builds its vector or
# matrix in one constructor call over its entries: filled entry by entry instead, each
# read is a store into a local that Taichi and LLVM then take apart again, which made
# tracing and compiling the step kernel measurably slower.


def _flat(W, c, n, vtype, is_mat):
    """A flat table's column: entries o + r * W + c + k."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), o, r):
            return a[o + r * W + c]

        @ti.func
        def put(a: ti.template(), o, r, v):
            a[o + r * W + c] = v
    else:
        @ti.func
        def get(a: ti.template(), o, r):
            i = o + r * W + c
            return vtype([a[i + k] for k in ti.static(range(n))])

        if is_mat:
            @ti.func
            def put(a: ti.template(), o, r, v):
                i = o + r * W + c
                for k in ti.static(range(n)):
                    a[i + k] = v[k // vtype.m, k % vtype.m]
        else:
            @ti.func
            def put(a: ti.template(), o, r, v):
                i = o + r * W + c
                for k in ti.static(range(n)):
                    a[i + k] = v[k]

    @ti.func
    def get_at(a: ti.template(), o, r, k):
        return a[o + r * W + c + k]

    @ti.func
    def put_at(a: ti.template(), o, r, k, v):
        a[o + r * W + c + k] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


# interleaved per-env data tables (physics/runtime/lanes.py):
FLAT_DATA = "flat_data"  # a flat one: entry e of the env at o is entry(o, e)
ROWS_DATA = "rows_data"  # a 3-D one: [env_index(s, r, column)]
ROW_DATA = "row_data"  # a 2-D one: [env_index(r, column)]
_INTERLEAVED = {L.FLAT: FLAT_DATA, L.ROWS: ROWS_DATA, L.ROW: ROW_DATA}


def _flat_data(W, c, n, vtype, is_mat):
    """An interleaved flat data table's column: entries entry(o, r * W + c + k)
    (physics/runtime/lanes.py)."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), o, r):
            return a[_entry(o, r * W + c)]

        @ti.func
        def put(a: ti.template(), o, r, v):
            a[_entry(o, r * W + c)] = v
    else:
        @ti.func
        def get(a: ti.template(), o, r):
            return vtype([a[_entry(o, r * W + c + k)] for k in ti.static(range(n))])

        if is_mat:
            @ti.func
            def put(a: ti.template(), o, r, v):
                for k in ti.static(range(n)):
                    a[_entry(o, r * W + c + k)] = v[k // vtype.m, k % vtype.m]
        else:
            @ti.func
            def put(a: ti.template(), o, r, v):
                for k in ti.static(range(n)):
                    a[_entry(o, r * W + c + k)] = v[k]

    @ti.func
    def get_at(a: ti.template(), o, r, k):
        return a[_entry(o, r * W + c + k)]

    @ti.func
    def put_at(a: ti.template(), o, r, k, v):
        a[_entry(o, r * W + c + k)] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


def _flat_data_entry(W, c):
    lanes = table_lanes()
    return lambda o, r, k: (o + (r * W + (c + k)) * lanes,)


def _flat_shared(W, c, n, vtype, is_mat):
    """A flat table's column with one row set for every env (scalars only, layout.py):
    entry r * W + c."""

    @ti.func
    def get(a: ti.template(), r):
        return a[r * W + c]

    @ti.func
    def put(a: ti.template(), r, v):
        a[r * W + c] = v

    return {"*": get, "set_*": put}


def _rows(W, c, n, vtype, is_mat):
    """A 3-D table's column: entries [s, r, c + k]."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), s, r):
            return a[s, r, c]

        @ti.func
        def put(a: ti.template(), s, r, v):
            a[s, r, c] = v
    else:
        @ti.func
        def get(a: ti.template(), s, r):
            return vtype([a[s, r, c + k] for k in ti.static(range(n))])

        if is_mat:
            @ti.func
            def put(a: ti.template(), s, r, v):
                for k in ti.static(range(n)):
                    a[s, r, c + k] = v[k // vtype.m, k % vtype.m]
        else:
            @ti.func
            def put(a: ti.template(), s, r, v):
                for k in ti.static(range(n)):
                    a[s, r, c + k] = v[k]

    @ti.func
    def get_at(a: ti.template(), s, r, k):
        return a[s, r, c + k]

    @ti.func
    def put_at(a: ti.template(), s, r, k, v):
        a[s, r, c + k] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


def _row(W, c, n, vtype, is_mat):
    """A 2-D table's column (scalars and vectors, layout.py): entries [r, c + k]."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), r):
            return a[r, c]

        @ti.func
        def put(a: ti.template(), r, v):
            a[r, c] = v
    else:
        @ti.func
        def get(a: ti.template(), r):
            return vtype([a[r, c + k] for k in ti.static(range(n))])

        @ti.func
        def put(a: ti.template(), r, v):
            for k in ti.static(range(n)):
                a[r, c + k] = v[k]

    @ti.func
    def get_at(a: ti.template(), r, k):
        return a[r, c + k]

    @ti.func
    def put_at(a: ti.template(), r, k, v):
        a[r, c + k] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


def _rows_data(W, c, n, vtype, is_mat):
    """An interleaved 3-D table's column: entries [env_index(s, r, c + k)]."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), s, r):
            return a[env_index(s, r, c)]

        @ti.func
        def put(a: ti.template(), s, r, v):
            a[env_index(s, r, c)] = v
    else:
        @ti.func
        def get(a: ti.template(), s, r):
            return vtype([a[env_index(s, r, c + k)] for k in ti.static(range(n))])

        if is_mat:
            @ti.func
            def put(a: ti.template(), s, r, v):
                for k in ti.static(range(n)):
                    a[env_index(s, r, c + k)] = v[k // vtype.m, k % vtype.m]
        else:
            @ti.func
            def put(a: ti.template(), s, r, v):
                for k in ti.static(range(n)):
                    a[env_index(s, r, c + k)] = v[k]

    @ti.func
    def get_at(a: ti.template(), s, r, k):
        return a[env_index(s, r, c + k)]

    @ti.func
    def put_at(a: ti.template(), s, r, k, v):
        a[env_index(s, r, c + k)] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


def _row_data(W, c, n, vtype, is_mat):
    """An interleaved 2-D table's column (scalars and vectors): entries [env_index(r, c + k)]."""
    if vtype is None:
        @ti.func
        def get(a: ti.template(), r):
            return a[env_index(r, c)]

        @ti.func
        def put(a: ti.template(), r, v):
            a[env_index(r, c)] = v
    else:
        @ti.func
        def get(a: ti.template(), r):
            return vtype([a[env_index(r, c + k)] for k in ti.static(range(n))])

        @ti.func
        def put(a: ti.template(), r, v):
            for k in ti.static(range(n)):
                a[env_index(r, c + k)] = v[k]

    @ti.func
    def get_at(a: ti.template(), r, k):
        return a[env_index(r, c + k)]

    @ti.func
    def put_at(a: ti.template(), r, k, v):
        a[env_index(r, c + k)] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


def _entries(W, c, n, vtype, is_mat):
    """A 1-D table of one row's column (scalars and vectors, layout.py): entries [c + k]."""
    if vtype is None:
        @ti.func
        def get(a: ti.template()):
            return a[c]

        @ti.func
        def put(a: ti.template(), v):
            a[c] = v
    else:
        @ti.func
        def get(a: ti.template()):
            return vtype([a[c + k] for k in ti.static(range(n))])

        @ti.func
        def put(a: ti.template(), v):
            for k in ti.static(range(n)):
                a[c + k] = v[k]

    @ti.func
    def get_at(a: ti.template(), k):
        return a[c + k]

    @ti.func
    def put_at(a: ti.template(), k, v):
        a[c + k] = v

    return {"*": get, "set_*": put, "*_at": get_at, "set_*_at": put_at}


# The same four accessors expanded where they are called (launch.TracedAccess): Python run
# while Taichi traces the caller, building the entry's index from the caller's arguments
# and its load or store. Entry k of a column, from the arguments that pick its row:
_ENTRY = {
    L.FLAT: (2, lambda W, c: lambda o, r, k: (o + r * W + (c + k),)),
    FLAT_DATA: (2, _flat_data_entry),
    L.FLAT_SHARED: (1, lambda W, c: lambda r, k: (r * W + c,)),  # scalars only (layout.py)
    L.ROWS: (2, lambda W, c: lambda s, r, k: (s, r, c + k)),
    L.ROW: (1, lambda W, c: lambda r, k: (r, c + k)),
    L.ENTRIES: (0, lambda W, c: lambda k: (c + k,)),
    ROWS_DATA: (2, lambda W, c: lambda s, r, k: env_index(s, r, c + k)),
    ROW_DATA: (1, lambda W, c: lambda r, k: env_index(r, c + k)),
}


def _expanded(P, index, W, c, n, vtype, is_mat):
    rows, make_entry = _ENTRY[index]
    entry = make_entry(W, c)

    def split(args, after, accessor):
        # the row's arguments, then the `after` trailing ones (entry, value)
        if len(args) != rows + after:
            raise TypeError(f"{accessor.__name__} takes the table and {rows + after} more arguments, got {len(args)}")
        return args[:rows], args[rows:]

    def get(a, *args):
        row, _ = split(args, 0, get)
        if vtype is None:
            return P.load(a, *entry(*row, 0))
        row = P.once(row)
        return vtype([P.load(a, *entry(*row, k)) for k in range(n)])

    def put(a, *args):
        row, (v,) = split(args, 1, put)
        if vtype is None:
            P.store(a, entry(*row, 0), v)
            return
        row = P.once(row)
        v = P.local(v)  # copied first: an expression over this entry's own table reads it
        for k in range(n):
            P.store(a, entry(*row, k), P.load(v, *((k // vtype.m, k % vtype.m) if is_mat else (k,))))

    def get_at(a, *args):
        row, (k,) = split(args, 1, get_at)
        return P.load(a, *entry(*row, k))

    def put_at(a, *args):
        row, (k, v) = split(args, 2, put_at)
        P.store(a, entry(*row, k), v)

    return {"*": P.expands(get), "set_*": P.expands(put), "*_at": P.expands(get_at), "set_*_at": P.expands(put_at)}
