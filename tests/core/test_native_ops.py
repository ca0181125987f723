"""DeepSpeed's op builds: a lock a killed build left behind is cleared, a live build's kept."""

from __future__ import annotations

import os
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
