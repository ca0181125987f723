"""DeepSpeed's shared-memory collective op on a CPU: built once, in this environment's own
folder, never waited on for ever, and its shared memory given back.

DeepSpeed compiles the op (ninja, g++) the first time a process trains under it on a CPU, in
torch's extension folder, guarded by a ``lock`` file that torch waits on for as long as it
exists. Three things went wrong with torch's default folder (``~/.cache/torch_extensions``,
one per user):

- every checkout's environment shares it, and the op's sources live in each environment, so
  two checkouts rebuild it in turn;
- a build that is killed (Ctrl-C, a CI timeout, a test's deadline) leaves its ``lock``
  behind, and every later build waits on it without a word, for ever;
- torch runs whichever ``ninja`` comes first on ``PATH``: the environment's own (pip's, a
  DeepSpeed dependency) where ``.venv/bin`` leads, as in the stages ``dvc repro`` starts,
  else the system's. Two ninja versions record a build's command under different hashes,
  so each rebuilt the op the other had built (75 s idle, minutes on a busy machine).

So the folder is this environment's own (``<sys.prefix>/torch_extensions``; a
``TORCH_EXTENSIONS_DIR`` set by the user wins), the environment's ninja leads ``PATH``, and a
lock that no build holds is removed, with a warning, before anything waits on it. `make
setup` builds the op once: ``python -m components.core.native_ops``.

Each rank of a DeepSpeed world on one machine also creates a 64 MiB shared-memory buffer
(``/dev/shm/deepspeed_allreduce_buffer_<uid>_<address>_<port>_<rank>``) that DeepSpeed never
removes: every training run left one per rank, in memory, until the machine restarted (236,
15 GB, on this project's development machine in a day, until a test run was killed for want
of memory). A rank now removes its own when it exits, and a buffer of this user's that no
process maps any more (its rank was killed) is removed before DeepSpeed starts.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
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
# A rank maps the buffer it creates at once (one write, then mmap): one unmapped this long
# after its last change belongs to no live rank.
BUFFER_GRACE_S = 10.0
SHARED_MEMORY = Path("/dev/shm")
BUFFER_PREFIX = "deepspeed_allreduce_buffer"
_releasing: list[Path] = []  # the buffer this process removes at exit, once registered


def extensions_folder() -> Path:
    """Torch's extension folder for this process, set to the environment's own unless the
    user chose one."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch_extensions"))
    return Path(os.environ["TORCH_EXTENSIONS_DIR"])


def prepare() -> Path:
    """Point torch's extension builds at this environment's folder and ninja, clear the
    locks that killed builds left there and the shared buffers that killed ranks left, and
    have this rank's buffer removed at exit. Call before DeepSpeed starts."""
    folder = extensions_folder()
    use_environment_ninja()
    remove_orphaned_buffers()
    release_own_buffer_at_exit()
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


def use_environment_ninja() -> None:
    """Put this environment's ``bin`` first on ``PATH`` when it has a ``ninja`` that is not
    the one ``PATH`` finds first, so that every build here runs the same ninja."""
    own = Path(sys.executable).parent / "ninja"
    found = shutil.which("ninja")
    if own.is_file() and (found is None or Path(found).resolve() != own.resolve()):
        os.environ["PATH"] = f"{own.parent}{os.pathsep}{os.environ.get('PATH', '')}"


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


def own_buffer() -> Path | None:
    """The shared buffer DeepSpeed makes for this rank (named from the world's address and
    port, which the launcher or ``ensure_distributed_environment`` set), or None outside a
    world."""
    try:
        address, port, rank = (os.environ[k] for k in ("MASTER_ADDR", "MASTER_PORT", "RANK"))
    except KeyError:
        return None
    return SHARED_MEMORY / f"{BUFFER_PREFIX}_{os.getuid()}_{address}_{port}_{rank}"


def release_own_buffer_at_exit() -> None:
    """Remove this rank's buffer when the process exits: the other ranks mapped it when the
    world started, and a mapping outlives the file's name."""
    buffer = own_buffer()
    if buffer is None or buffer in _releasing:
        return
    if not _releasing:
        atexit.register(_release)
    _releasing.append(buffer)


def _release() -> None:
    for buffer in _releasing:
        buffer.unlink(missing_ok=True)


def remove_orphaned_buffers(*, now: float | None = None, proc: Path = Path("/proc")) -> int:
    """Remove this user's DeepSpeed buffers that no process maps: their ranks ended without
    removing them. Only those older than ``BUFFER_GRACE_S`` (a rank maps its buffer just
    after creating it). Returns how many went."""
    if not (SHARED_MEMORY.is_dir() and proc.is_dir()):
        return 0
    clock = time.time() if now is None else now
    candidates = [
        b
        for b in SHARED_MEMORY.glob(f"{BUFFER_PREFIX}_{os.getuid()}_*")
        if clock - b.stat().st_mtime > BUFFER_GRACE_S
    ]
    if not candidates:
        return 0
    mapped = _mapped_files(proc)
    orphans = [b for b in candidates if str(b) not in mapped]
    for buffer in orphans:
        buffer.unlink(missing_ok=True)
    if orphans:
        log.warning(
            "removed %d DeepSpeed shared-memory buffers (%s...) that ranks which ended left"
            " behind", len(orphans), orphans[0].name,
        )  # fmt: skip
    return len(orphans)


def _mapped_files(proc: Path) -> set[str]:
    """Every file some process this user can read maps into memory (``/proc/<pid>/maps``)."""
    mapped: set[str] = set()
    for pid in proc.iterdir():
        if not pid.name.isdigit():
            continue
        try:
            text = (pid / "maps").read_text(encoding="utf-8", errors="replace")
        except OSError:  # the process ended, or is another user's
            continue
        for line in text.splitlines():
            fields = line.split(maxsplit=5)  # address perms offset device inode [path]
            if len(fields) == 6:
                mapped.add(fields[5])
    return mapped


def build() -> Path:
    """Build DeepSpeed's CPU collective op now (seconds when it is already built)."""
    folder = prepare()
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder

    ShareMemCommBuilder().load()
    return folder


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(f"DeepSpeed's CPU op is built in {build()}")
