"""The registered pyfunc's own code, logged with each version (MLflow ``code_paths``).

Loading a version imports ``components.train.pyfunc`` (its class is pickled by reference);
with veiltune's stage code logged beside it, under ``code/components/``, a version loads
where veiltune is not installed: torch, transformers, peft, pandas and MLflow are all it
needs. The whole package's Python source travels (about 0.8 MB), with the package data its
modules read (the page templates, the generator's scripts), not a list of the modules a
request imports today: such a list breaks a version as soon as one of them imports one more
module, and the copy under ``code/`` comes first on the path, so it would shadow an
installed veiltune's too. The DialogSum sample (``ingest/samples``, data for a run) stays.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import components

_PACKAGE_ROOT = Path(components.__file__).resolve().parent
_CODE_SUFFIXES = (".py", ".html", ".txt")  # the source, its templates, the generator's scripts
_SAMPLES = Path("ingest/samples")


def pyfunc_code(folder: Path) -> Path:
    """Copy the ``components`` package's Python files and package data into
    ``folder/components``, keeping its layout; returns that folder, the one ``code_paths``
    names (logged as ``code/components``)."""
    target = folder / "components"
    for source in sorted(_code_files()):
        destination = target / source.relative_to(_PACKAGE_ROOT)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
    return target


def _code_files() -> list[Path]:
    files = [p for suffix in _CODE_SUFFIXES for p in _PACKAGE_ROOT.rglob(f"*{suffix}")]
    return [p for p in files if _SAMPLES not in p.relative_to(_PACKAGE_ROOT).parents]
