"""DeepSpeed's compiled ops on a CPU: built into this environment's own folder, never waited
on forever.

DeepSpeed compiles its shared-memory collective op (ninja, g++) the first time a process
trains under it on a CPU, in torch's extension folder, guarded by a ``lock`` file that torch
waits on for as long as it exists. Two things went wrong with torch's default folder
(``~/.cache/torch_extensions``, one per user):

- every checkout's environment shares it, and the op's sources live in each environment, so
  two checkouts rebuild it in turn;
- a build that is killed (Ctrl-C, a CI timeout, a test's deadline) leaves its ``lock``
  behind, and every later build waits on it without a word, for ever.

So the folder is this environment's own (``<sys.prefix>/torch_extensions``; a
``TORCH_EXTENSIONS_DIR`` set by the user wins), and a lock that no build holds is removed,
with a warning, before anything waits on it. `make setup` builds the op once:
``python -m components.core.native_ops``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

# A lock younger than this is left alone even where no build process can be seen: torch
# writes the lock, then its ninja file, then starts ninja in the build folder.
GRACE_S = 120.0
# Where the builders' working folders cannot be read (no /proc), a lock is stale only when
# this old: longer than any build of the op takes on a loaded 2-core machine.
STALE_WITHOUT_PROC_S = 1800.0


def extensions_folder() -> Path:
    """Torch's extension folder for this process, set to the environment's own unless the
    user chose one."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch_extensions"))
    return Path(os.environ["TORCH_EXTENSIONS_DIR"])


def prepare() -> Path:
    """Point torch's extension builds at this environment's folder and clear the locks
    that killed builds left there. Call before DeepSpeed starts on a CPU."""
    folder = extensions_folder()
    # <folder>/<op>/lock where TORCH_EXTENSIONS_DIR is set, <folder>/py311_cpu/<op>/lock not
    for lock in sorted([*folder.glob("*/lock"), *folder.glob("*/*/lock")]):
        if is_stale(lock):
            log.warning(
                "removing %s: a build of %s was killed before it finished and no build holds"
                " it now (torch would wait on it for ever)",
                lock,
                lock.parent.name,
            )
            lock.unlink(missing_ok=True)
    return folder


def is_stale(lock: Path, *, now: float | None = None, proc: Path = Path("/proc")) -> bool:
    """Whether ``lock`` was left by a build that no longer runs: older than the grace period
    and no process works in its folder (where /proc says so), or very old (where not)."""
    try:
        age = (time.time() if now is None else now) - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age < GRACE_S:
        return False
    if not proc.is_dir():
        return age > STALE_WITHOUT_PROC_S
    return not any(_works_in(pid, lock.parent) for pid in proc.iterdir())


def _works_in(pid: Path, folder: Path) -> bool:
    if not pid.name.isdigit():
        return False
    try:
        cwd = Path(os.readlink(pid / "cwd"))
    except OSError:  # the process ended, or is another user's
        return False
    return cwd == folder or folder in cwd.parents


def build() -> Path:
    """Build DeepSpeed's CPU collective op now (seconds when it is already built)."""
    folder = prepare()
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder

    ShareMemCommBuilder().load()
    return folder


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(f"DeepSpeed's CPU op is built in {build()}")
