"""Processes ending together keep their compiled kernels: Taichi's program ends under a lock
of the kernel cache's (physics/runtime/kernel_cache.py), one process after another."""

import fcntl
import threading

from taigym.physics.runtime import kernel_cache


def test_a_program_ends_only_when_no_other_process_is_ending(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "folder", lambda: tmp_path)
    ended = threading.Event()
    with open(tmp_path / "ending.lock", "a") as other:  # another process, writing the cache
        fcntl.flock(other, fcntl.LOCK_EX)
        thread = threading.Thread(target=kernel_cache.end_program_in_turn, args=(ended.set,))
        thread.start()
        assert not ended.wait(0.5)
        fcntl.flock(other, fcntl.LOCK_UN)
        assert ended.wait(10)
    thread.join()


def test_a_cache_folder_that_cannot_be_written_still_ends_the_program_as_taichi_would(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(kernel_cache, "folder", lambda: blocked / "taigym")  # under a file: mkdir fails
    calls = []
    kernel_cache.end_program_in_turn(lambda: calls.append(1))
    assert calls == []  # Taichi's own ending at exit keeps what it can
