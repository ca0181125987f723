"""DeepSpeed's op builds: a lock a killed build left behind is cleared, a live build's kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.core import native_ops


def _lock(root: Path, age_s: float, *, nested: bool = False) -> Path:
    """A build's lock where torch puts it: <folder>/<op>/ (or <folder>/py311_cpu/<op>/ in
    torch's default folder)."""
    lock = root / ("py311_cpu" if nested else "") / "deepspeed_shm_comm" / "lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


@pytest.fixture
def extensions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("nested", [False, True])
def test_a_lock_no_build_holds_is_removed(extensions: Path, nested: bool) -> None:
    lock = _lock(extensions, age_s=native_ops.GRACE_S + 60, nested=nested)
    assert native_ops.prepare() == extensions
    assert not lock.exists()


def test_a_fresh_lock_is_left_to_the_build_that_just_took_it(extensions: Path) -> None:
    lock = _lock(extensions, age_s=1)
    native_ops.prepare()
    assert lock.exists()


def test_an_old_lock_is_kept_while_a_process_works_in_its_folder(extensions: Path) -> None:
    lock = _lock(extensions, age_s=native_ops.GRACE_S + 60)
    builder = subprocess.Popen(  # stands for ninja, which runs in the build folder
        [sys.executable, "-c", "import time; time.sleep(30)"], cwd=lock.parent
    )
    try:
        native_ops.prepare()
        assert lock.exists()
    finally:
        builder.kill()
        builder.wait()
    native_ops.prepare()
    assert not lock.exists()


def test_without_proc_only_a_very_old_lock_is_stale(tmp_path: Path) -> None:
    lock = _lock(tmp_path, age_s=native_ops.GRACE_S + 60)
    no_proc = tmp_path / "no-proc"
    assert not native_ops.is_stale(lock, proc=no_proc)
    later = time.time() + native_ops.STALE_WITHOUT_PROC_S
    assert native_ops.is_stale(lock, now=later, proc=no_proc)


def test_the_folder_is_the_environments_own_unless_the_user_chose_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    assert native_ops.extensions_folder() == Path(sys.prefix) / "torch_extensions"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    assert native_ops.extensions_folder() == tmp_path


def test_builds_run_the_environments_own_ninja(
    extensions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ninja versions hash a build's command differently: each rebuilt the other's op."""
    own = Path(sys.executable).parent / "ninja"
    if not own.is_file():
        pytest.skip("this environment has no ninja of its own (pip's ninja: DeepSpeed's)")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    native_ops.prepare()
    found = shutil.which("ninja")
    assert found is not None and Path(found).resolve() == own.resolve()


needs_shared_memory = pytest.mark.skipif(
    not native_ops.SHARED_MEMORY.is_dir(), reason="no /dev/shm on this system"
)


def _buffer(port: int, age_s: float) -> Path:
    """A buffer as DeepSpeed names one, on a port no world here uses."""
    buffer = native_ops.SHARED_MEMORY / (
        f"{native_ops.BUFFER_PREFIX}_{os.getuid()}_127.0.0.9_{port}_0"
    )
    buffer.write_bytes(b"\0" * 4096)
    then = time.time() - age_s
    os.utime(buffer, (then, then))
    return buffer


@needs_shared_memory
def test_a_buffer_no_process_maps_is_removed_one_in_use_is_kept() -> None:
    old = native_ops.BUFFER_GRACE_S + 60
    orphan, young, in_use = _buffer(1, old), _buffer(2, age_s=1), _buffer(3, old)
    holder = subprocess.Popen(  # a live rank: maps its buffer until it ends
        [sys.executable, "-c", MAP_AND_WAIT, str(in_use)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "mapped"
        assert native_ops.remove_orphaned_buffers() == 1
        assert not orphan.exists() and young.exists() and in_use.exists()
    finally:
        holder.kill()
        holder.wait()
        for buffer in (orphan, young, in_use):
            buffer.unlink(missing_ok=True)


MAP_AND_WAIT = """
import mmap, sys, time
with open(sys.argv[1], "r+b") as f:
    view = mmap.mmap(f.fileno(), 0)
print("mapped", flush=True)
time.sleep(60)
"""


@needs_shared_memory
def test_a_rank_removes_its_own_buffer_when_it_exits() -> None:
    buffer = _buffer(4, age_s=0)
    rank = {"MASTER_ADDR": "127.0.0.9", "MASTER_PORT": "4", "RANK": "0"}
    try:
        subprocess.run(
            [sys.executable, "-c", RELEASE_AT_EXIT, str(buffer)],
            env={**os.environ, **rank},
            check=True,
        )
        assert not buffer.exists()
    finally:
        buffer.unlink(missing_ok=True)


RELEASE_AT_EXIT = """
import sys
from components.core import native_ops
assert str(native_ops.own_buffer()) == sys.argv[1], native_ops.own_buffer()
native_ops.release_own_buffer_at_exit()
assert native_ops.own_buffer().exists()
"""
