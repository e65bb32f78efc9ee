"""The tables' descriptions (physics/layout.py) and their generated accessors
(physics/access.py) agree: every column's accessors read and write exactly the entries
the description gives it, as ``@ti.func``s and expanded where they are called, and no
kernel indexes a table by position."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from taigym.physics import layout as L
from taigym.physics.access import Access, make_access
from taigym.physics.runtime.backend import ensure_runtime, ti
from taigym.physics.runtime.taichi_adapter import traced_access

from taigym import physics

PHYSICS = Path(physics.__file__).parent
ROWS = 3  # rows per set in the test tables
SETS = 2  # row sets (envs or model sets); the accessors are checked on the last


def _code(r, entry):
    """The value written at row r, column entry: distinct for every (row, entry)."""
    return 1000 * (r + 1) + entry + 1


def _nrows(table):
    return 1 if table.index == L.ENTRIES else ROWS


def _shape(table):
    return {L.FLAT: (SETS * ROWS * table.width,), L.FLAT_SHARED: (ROWS * table.width,),
            L.ROWS: (SETS, ROWS, table.width), L.ROW: (ROWS, table.width), L.ENTRIES: (table.width,)}[table.index]


def _expected(table):
    """The table as the description says the writes below leave it: each used entry holds
    its code, padding stays zero."""
    rows = np.zeros((_nrows(table), table.width))
    for col in table.columns.values():
        for r in range(_nrows(table)):
            rows[r, col.start : col.start + col.width] = [_code(r, col.start + k) for k in range(col.width)]
    if table.index == L.FLAT:
        return np.concatenate([np.zeros(ROWS * table.width), rows.ravel()])
    if table.index == L.ROWS:
        return np.stack([np.zeros_like(rows), rows])
    return rows.reshape(_shape(table))


def _accessors(table, access):
    """(column, reader, writer, entry reader, entry writer) of each column."""
    out = []
    for col in table.columns.values():
        name = table.prefix + col.name
        at = (getattr(access, name + "_at"), getattr(access, "set_" + name + "_at")) if col.width > 1 else (None, None)
        out.append((col, getattr(access, name), getattr(access, "set_" + name), *at))
    return out


def _base(table):
    """The leading index arguments of the last row set."""
    return {L.FLAT: ((SETS - 1) * ROWS * table.width,), L.FLAT_SHARED: (), L.ROWS: (SETS - 1,), L.ROW: (),
            L.ENTRIES: ()}[table.index]


def _kernels(table, access, dtype):
    cols, base, nrows = _accessors(table, access), _base(table), _nrows(table)
    one_row = table.index == L.ENTRIES  # a one-row table's accessors take no row
    arr = ti.types.ndarray(dtype=dtype, ndim=len(_shape(table)))

    # the row set's leading index, where the table has one: passed by name rather than as
    # ``*base`` before the row (quadrants takes a starred argument only as a call's last)
    has_lead, lead = bool(base), (base or (0,))[0]

    @ti.func
    def get(f: ti.template(), a: ti.template(), r):
        if ti.static(one_row):
            return f(a)
        elif ti.static(not has_lead):
            return f(a, r)
        else:
            return f(a, lead, r)

    @ti.func
    def get_at(f: ti.template(), a: ti.template(), r, k: ti.template()):
        if ti.static(one_row):
            return f(a, k)
        elif ti.static(not has_lead):
            return f(a, r, k)
        else:
            return f(a, lead, r, k)

    @ti.func
    def put(f: ti.template(), a: ti.template(), r, v):
        if ti.static(one_row):
            f(a, v)
        elif ti.static(not has_lead):
            f(a, r, v)
        else:
            f(a, lead, r, v)

    @ti.func
    def put_at(f: ti.template(), a: ti.template(), r, k: ti.template(), v):
        if ti.static(one_row):
            f(a, k, v)
        elif ti.static(not has_lead):
            f(a, r, k, v)
        else:
            f(a, lead, r, k, v)

    @ti.kernel
    def write_entries(a: arr):
        """Each entry through the entry writer (scalars through the writer)."""
        for r in range(nrows):
            for i in ti.static(range(len(cols))):
                if ti.static(cols[i][0].width == 1):
                    put(cols[i][2], a, r, 1000 * (r + 1) + cols[i][0].start + 1)
                else:
                    for k in ti.static(range(cols[i][0].width)):
                        put_at(cols[i][4], a, r, k, 1000 * (r + 1) + cols[i][0].start + k + 1)

    @ti.kernel
    def copy_columns(a: arr, b: arr, entries: ti.types.ndarray(dtype=dtype, ndim=2)):
        """Each column read whole and written whole into b, and its entries, as the reader
        and entry reader give them, into entries[r, start + k] (a matrix row-major)."""
        for r in range(nrows):
            for i in ti.static(range(len(cols))):
                put(cols[i][2], b, r, get(cols[i][1], a, r))
                if ti.static(cols[i][0].width == 1):
                    entries[r, cols[i][0].start] = get(cols[i][1], a, r)
                else:
                    for k in ti.static(range(cols[i][0].width)):
                        if ti.static(len(cols[i][0].shape) == 2):
                            n = ti.static(cols[i][0].shape[1])
                            entries[r, cols[i][0].start + k] = get(cols[i][1], a, r)[k // n, k % n]
                        else:
                            entries[r, cols[i][0].start + k] = get(cols[i][1], a, r)[k]
                        entries[nrows + r, cols[i][0].start + k] = get_at(cols[i][3], a, r, k)

    return write_entries, copy_columns


@pytest.mark.parametrize("expanded", [True, False], ids=["expanded", "functions"])
@pytest.mark.parametrize("table", L.TABLES, ids=lambda t: t.name)
def test_accessors_touch_the_entries_the_layout_gives(table, expanded, device):
    ensure_runtime(device)
    traced = traced_access()
    if expanded and traced is None:
        pytest.skip("accessors are expanded with taichi 1.7's tracer only")
    ti_dtype = ti.i32 if table.dtype == "int" else ti.f64
    write_entries, copy_columns = _kernels(table, Access(ti.f64, traced if expanded else None), ti_dtype)
    expected = _expected(table)

    a = ti.ndarray(ti_dtype, _shape(table))
    write_entries(a)
    np.testing.assert_array_equal(a.to_numpy(), expected)

    b = ti.ndarray(ti_dtype, _shape(table))
    nrows = _nrows(table)
    entries = ti.ndarray(ti_dtype, (2 * nrows, table.width))
    copy_columns(a, b, entries)
    np.testing.assert_array_equal(b.to_numpy(), expected)
    rows = expected.reshape(-1, nrows, table.width)[-1]
    got = entries.to_numpy()
    np.testing.assert_array_equal(got[:nrows, : table.used], rows[:, : table.used])
    wide = np.concatenate([np.arange(c.start, c.start + c.width) for c in table.columns.values() if c.width > 1] or
                          [np.zeros(0, int)])
    np.testing.assert_array_equal(got[nrows:, wide], rows[:, wide])


def test_descriptions_are_complete_and_consistent():
    """Columns tile each table without gaps, every column says what it holds and in which
    unit, widths of flat tables are powers of two, and accessor names are unique."""
    for table in L.TABLES:
        at = 0
        for col in table.columns.values():
            assert col.start == at and col.width >= 1, (table.name, col.name)
            assert col.meaning and col.unit, (table.name, col.name)
            at += col.width
        assert at == table.used <= table.width, table.name
        if table.index in (L.FLAT, L.FLAT_SHARED):
            assert table.width & (table.width - 1) == 0, table.name
    names = [t.prefix + c for t in L.TABLES for c in t.columns]
    assert len(names) == len(set(names))
    access = make_access(ti.f64).names()
    assert Access(ti.f64).names() == access
    assert len(access) == len(set(access)) == (sum(1 if c.width == 1 else 2 for t in L.TABLES
                                                   for c in t.columns.values()) * 2
                                               + sum(2 for t in L.TABLES if t.tail is not None))


def test_a_description_its_accessors_cannot_serve_names_the_table_and_column():
    with pytest.raises(ValueError, match=r"table 'bad', column 'mat': a row table's columns hold scalars and vectors"):
        L.Table("bad", "bad_", L.ROW, "float", "a 2-D table", ("pos", 3, "position", "m"),
                ("mat", 9, "orientation", "rotation 3x3"))
    with pytest.raises(ValueError, match=r"table 'ids', column 'pair': a flat_shared table's columns hold scalars"):
        L.Table("ids", "ids_", L.FLAT_SHARED, "int", "shared ids", ("pair", 2, "two ids", "index"))


# Row arithmetic on a packed table (``o + b * L.NBODY_D + XPOS``, ``row = o + b * L.NBODY_D``)
# and column constants read out of the layout (``L.BODY_D["xpos"][0]``, ``L.JNT_TYPE``):
# what the accessors replace. An env's start (``w * stride * L.NDOF_D``) is not a column.
_POSITIONAL = re.compile(r"\* L\.N[A-Z_]+\s*\+|= \w+ \+ \w+ \* L\.N[A-Z_]+$|L\.[A-Z_]+\[[\"']\w+[\"']\]"
                         r"|\bL\.(BODY|JNT|DOF|ACT|TEN|EQ|WRAP|EFC)_[A-Z0-9_]+\b")
# The one exception: the collision stage takes its body poses from any flat table, given
# that table's row width and pose columns (physics/collision/driver.py, geom_poses and its
# per-geom geom_pose; the standalone Collider hands it a 7-wide table of its own), so the
# step hands it body_d's.
_INTERFACE = re.compile(r"geom_poses?\(")


def _layout_names(tree) -> set:
    """Module-level names bound to a column position read out of the layout."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and re.search(
                r"\bL\.[A-Z_]+(\[|\.items|\.start)|\b[A-Z_]+\[['\"]\w+['\"]\]\[0\]|\b[A-Z_]+\.(items|start)\(",
                ast.unparse(node.value)):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _bound_anywhere() -> set:
    """Names bound to a layout column position by any engine module."""
    return set().union(*(_layout_names(ast.parse(p.read_text())) for p in PHYSICS.rglob("*.py")))


def _imported(tree) -> set:
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def _kernel_lines(source: str, elsewhere: frozenset = frozenset()) -> list[int]:
    """Lines inside @ti.func and @ti.kernel bodies that index a layout table by position:
    row arithmetic, a layout column constant, or a name bound to one (in this module, or
    imported from one of ``elsewhere``'s)."""
    tree, lines = ast.parse(source), source.splitlines()
    local = _layout_names(tree) | (_imported(tree) & elsewhere)
    local_use = re.compile(r"\b(" + "|".join(map(re.escape, sorted(local))) + r")\b") if local else None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d).endswith(("ti.func", "ti.kernel")) for d in node.decorator_list):
            for n in range(node.body[0].lineno, node.end_lineno + 1):
                if _INTERFACE.search(lines[n - 1]):
                    continue
                if _POSITIONAL.search(lines[n - 1]) or (local_use and local_use.search(lines[n - 1])):
                    found.append(n)
    return found


def test_no_kernel_indexes_a_layout_table_by_position():
    elsewhere = frozenset(_bound_anywhere())
    found = {str(path.relative_to(PHYSICS)): _kernel_lines(path.read_text(), elsewhere)
             for path in sorted(PHYSICS.rglob("*.py")) if path.name != "access.py"}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_rule_finds_positional_indexing():
    source = ('XPOS = L.BODY_D["xpos"][0]\n\n\n@ti.func\ndef f(a, o, b):\n'
              '    x = a[o + b * L.NBODY_D + 3]\n    y = a[o + XPOS]\n    z = A.body_xpos(a, o, b)\n'
              '    return a[b * 8 + L.BODY_PARENT]\n')
    assert _kernel_lines(source) == [6, 7, 9]
    imported = 'from .contact import C_POS\n\n\n@ti.func\ndef f(con_f, w, c):\n    return con_f[w, c, C_POS]\n'
    assert _kernel_lines(imported, frozenset({"C_POS"})) == [6]
