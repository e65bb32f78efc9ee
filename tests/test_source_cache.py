"""Function sources kept between processes (physics/runtime/source_cache.py): a kept
function's lines are inspect's, a new process reads none again, an edited file's are read
anew, and a store that cannot be read is ignored."""

import importlib.util
import inspect
import os

import pytest
from taigym.physics.runtime import kernel_cache, source_cache


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "folder", lambda: tmp_path / "taigym")
    monkeypatch.setattr(source_cache, "_store", None)
    monkeypatch.setattr(source_cache, "_dirty", False)
    return tmp_path


def new_process(monkeypatch):
    # what a new process starts from: nothing in memory, only the file
    monkeypatch.setattr(source_cache, "_store", None)


def module_from(path, text):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Reads:
    def __init__(self):
        self.names = []

    def __call__(self, function):
        self.names.append(function.__name__)
        return inspect.getsourcelines(function)


SOURCE = "x = 1\n\n\ndef f(a):\n    return a + 1\n\n\ndef g(a):\n    # {note}\n    return a * 2\n"


def test_a_kept_function_is_not_read_again_by_the_next_process(store, monkeypatch):
    module = module_from(store / "kept_fns.py", SOURCE.format(note="twice"))
    reads = Reads()
    first = source_cache.source_lines(module.g, reads)
    assert first == inspect.getsourcelines(module.g) and reads.names == ["g"]
    source_cache.keep()
    new_process(monkeypatch)
    again = source_cache.source_lines(module.g, reads)
    assert again == first and reads.names == ["g"]
    assert source_cache.source_lines(module.f, reads) == inspect.getsourcelines(module.f)
    assert reads.names == ["g", "f"]


def test_an_edited_file_is_read_anew(store, monkeypatch):
    path = store / "edited_fns.py"
    module = module_from(path, SOURCE.format(note="twice"))
    reads = Reads()
    source_cache.source_lines(module.g, reads)
    source_cache.keep()
    new_process(monkeypatch)
    module = module_from(path, SOURCE.format(note="doubled, now with a longer comment"))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    lines, _ = source_cache.source_lines(module.g, reads)
    assert reads.names == ["g", "g"] and "longer comment" in "".join(lines)


@pytest.mark.parametrize("content", ["not json", '{"version": 0}', '{"version": 1, "files": {"a": 1}}',
                                     '{"version": 1, "files": {}, "functions": []}',
                                     '{"version": 1, "files": {}, "functions": {"k:1:f": 3}}'])
def test_a_store_that_cannot_be_read_is_ignored(store, content):
    (store / "taigym").mkdir()
    source_cache._path().write_text(content)
    module = module_from(store / "broken_store_fns.py", SOURCE.format(note="twice"))
    reads = Reads()
    assert source_cache.source_lines(module.f, reads) == inspect.getsourcelines(module.f)
    assert reads.names == ["f"]


def test_source_lines_are_filled_as_textwrap_fills_them():
    """Taichi passes each traced line through textwrap.fill; the quick version gives the same
    text for every line of the package and for the whitespace textwrap treats specially."""
    import textwrap
    from pathlib import Path

    from taigym.physics.runtime.taichi_adapter import fill_source_line

    root = Path(source_cache.__file__).resolve().parents[2]
    lines = [line for path in sorted(root.glob("[ept]*/**/*.py")) for line in path.read_text().splitlines(True)]
    assert len(lines) > 10_000
    lines += ["", "\n", "   \n", "    x = 1  \n", "\tx = 1\n", "x\t= 1\n", "a\rb\n", "a\x0cb", "a\nb\n",
              "x = '\xa0'\xa0\n", "  # a\u2003b\n", "y" * 10_000 + " z\n"]
    for line in lines:
        assert fill_source_line(line, tabsize=4, width=9999) == textwrap.fill(line, tabsize=4, width=9999), repr(line)


def test_a_stale_kernel_cache_lock_is_removed(tmp_path, monkeypatch, capsys):
    """A lock file a killed process left keeps Taichi from loading or keeping any compiled
    kernel; one older than STALE_LOCK_S goes, a fresh one (a live process's) stays."""
    import types

    monkeypatch.setattr(kernel_cache, "current_cfg", lambda: types.SimpleNamespace(offline_cache_file_path=str(tmp_path)))
    stale, fresh = tmp_path / "ticache.lock", tmp_path / "other.lock"
    stale.touch()
    fresh.touch()
    old = stale.stat().st_mtime - kernel_cache.STALE_LOCK_S - 1
    os.utime(stale, (old, old))
    kernel_cache.clear_stale_locks()
    assert not stale.exists() and fresh.exists()
    assert "ticache.lock" in capsys.readouterr().err
