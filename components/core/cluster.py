"""The data stages on a Dask cluster: a JSONL file cut into byte ranges of whole lines, each
range a task that reads its lines and writes its own part files, the parts merged in input
order into the stage's outputs, atomically.

Tasks carry paths and byte ranges, never record text: the workers read the input and write
their parts on a file system they share with the client (a cluster without one needs the
corpus on storage every worker reads; ``infra/dask/README.md``). A worker lost mid-run has
its tasks recomputed by the scheduler; a part is written under a temporary name and renamed,
so a recomputed part replaces a lost one whole. The first task that fails (a malformed
record: its file and line) cancels the rest and nothing is merged.

A scheduler's address says how it is reached: ``tcp://`` is plaintext and lets any client
that reaches it run code on the workers, where a run's secret (the salt) and policy files
are held: it is warned about. ``tls://`` encrypts and admits only a client presenting a
certificate the cluster's CA signed (``TlsFiles``, from ``anonymize.cluster_tls``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from components.core.errors import BackendError, InputError, ParamsError
from components.core.jsonio import ByteRange, byte_ranges
from components.core.progress import progress_bar

if TYPE_CHECKING:
    from distributed import Client
    from distributed.security import Security

logger = logging.getLogger(__name__)

LOCAL = "local"
PLAINTEXT, TLS = "tcp://", "tls://"
SCHEMES = (PLAINTEXT, TLS)
# A range per task: big enough that a task's overhead (milliseconds) is nothing beside its
# detection (seconds), small enough that every worker gets several and a lost one costs little.
MAX_PART_BYTES = 64 << 20
MIN_PART_BYTES = 64 << 10
PARTS_PER_WORKER = 4
T = TypeVar("T")


def check_cluster(value: str | None, key: str) -> None:
    """``null`` (in-process), ``local`` (a LocalCluster here) or a scheduler address
    (``tcp://`` or ``tls://``)."""
    if value is None or value == LOCAL:
        return
    scheme = next((s for s in SCHEMES if value.startswith(s)), None)
    host, _, port = value.removeprefix(scheme or "").rpartition(":")
    if scheme is None or not host or not port.isdigit():
        raise ParamsError(
            f"{key}: expected null, 'local' or a scheduler address such as "
            f"tls://scheduler:8786 or tcp://scheduler:8786, got {value!r}"
        )


@dataclass(frozen=True)
class Part:
    """One task's share: the lines of ``source`` (absolute, for the workers) in
    ``byte_range``, its outputs written into ``folder`` under names starting
    ``part-<index>``; ``name`` is the file as the user named it, for messages."""

    index: int
    source: Path
    name: str
    byte_range: ByteRange
    folder: Path

    def renamed(self, error: InputError) -> InputError:
        """``error`` naming the file as the user did."""
        return InputError(str(error).replace(str(self.source), self.name))

    def output(self, suffix: str) -> Path:
        return self.folder / f"part-{self.index:06d}{suffix}"


@contextlib.contextmanager
def part_writer(path: Path) -> Iterator[TextIO]:
    """A part file written as it goes and renamed into place only when done: a recomputed
    task replaces a lost one's part whole, and a worker holds a batch, not its part."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            yield handle
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class TlsFiles:
    """What a client presents to a ``tls://`` scheduler: the PEM of the CA that signed the
    cluster's certificates, and this client's certificate and private key."""

    ca_file: Path
    cert: Path
    key: Path

    def security(self) -> Security:
        """Dask's security settings for a client: TLS required, these files."""
        from distributed.security import Security

        return Security(
            tls_ca_file=str(self.ca_file),
            tls_client_cert=str(self.cert),
            tls_client_key=str(self.key),
            require_encryption=True,
        )


@functools.cache
def _warn_plaintext(address: str) -> None:
    """Once per scheduler address and process."""
    logger.warning(
        "the Dask scheduler at %s is reached in plaintext (tcp://): any client that reaches "
        "it can run code on its workers and read what this run sent them (the salt, the "
        "policy files); use tls:// with anonymize.cluster_tls (infra/dask/README.md)",
        address,
    )


@contextlib.contextmanager
def dask_client(
    address: str, workers: int, *, timeout_s: float, tls: TlsFiles | None = None
) -> Iterator[Client]:
    """A client of a LocalCluster of ``workers`` processes (``address`` ``local``: TLS, its
    certificates made for the run), or of the scheduler at ``address`` (``tls://`` with
    ``tls``); its dashboard link on the log.

    Raises:
        ParamsError: a ``tls://`` address without ``tls``.
        BackendError: the scheduler does not answer within ``timeout_s`` or refuses the
            certificates, naming it.
    """
    with (
        _distributed_logs_follow_the_root(),
        _client(address, workers, timeout_s=timeout_s, tls=tls) as client,
    ):
        yield client


@contextlib.contextmanager
def _distributed_logs_follow_the_root() -> Iterator[None]:
    """distributed's loggers at the root logger's level while a cluster runs here, then as
    they were.

    distributed sets its logger to INFO when imported, over the process's own policy (the
    CLI's: other libraries' warnings only, everything with ``-v``): a run printed a line per
    connection and worker, and a worker killed and recovered left a traceback at INFO (a
    connection closed at shutdown). At the root's level a recovered worker is one warning
    line (the nanny's "Restarting worker"), and a real failure still shows: distributed's
    errors, and the task's own error or ``BackendError`` from :func:`run_parts`. The worker
    processes of a LocalCluster log their errors only (``silence_logs``).
    """
    import distributed  # noqa: F401  (sets the level this undoes)

    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.NOTSET)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def _client(
    address: str, workers: int, *, timeout_s: float, tls: TlsFiles | None
) -> Iterator[Client]:
    """:func:`dask_client` itself, under the log levels it sets."""
    from distributed import Client, LocalCluster

    if address == LOCAL:
        from distributed.security import Security

        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,  # detection is CPU-bound Python: a process per core
                processes=True,
                host="127.0.0.1",
                dashboard_address=_dashboard_address(),
                silence_logs=logging.ERROR,
                # TLS with certificates made for this run, known to this process and its
                # workers only: any user of this machine can reach 127.0.0.1 (0.5 s more)
                security=Security.temporary(),
            ) as cluster,
            Client(cluster) as client,
        ):
            _announce(client, f"a local Dask cluster of {workers} worker{'s' * (workers != 1)}")
            yield client
        return
    security = _security(address, tls)
    try:
        client = Client(address, timeout=f"{timeout_s}s", security=security)
    except (OSError, TimeoutError) as exc:
        certificates = " with the certificates of anonymize.cluster_tls" if tls else ""
        raise BackendError(
            f"cannot reach the Dask scheduler at {address}{certificates} within {timeout_s:g} s "
            f"(anonymize.cluster or --cluster): {type(exc).__name__}"
        ) from None
    with client:
        _announce(client, f"the Dask scheduler at {address}")
        yield client


def _security(address: str, tls: TlsFiles | None) -> Security | None:
    """The client's security settings for ``address``; a plaintext one warned about."""
    if address.startswith(PLAINTEXT):
        _warn_plaintext(address)
    if not address.startswith(TLS):
        return None
    if tls is None:
        raise ParamsError(
            f"anonymize.cluster {address}: a tls:// scheduler needs anonymize.cluster_tls "
            "(ca_file, cert, key: the cluster's CA and this client's certificate and key)"
        )
    return tls.security()


def _dashboard_address() -> str | None:
    """An ephemeral port for the dashboard where bokeh is installed, else none."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return None
    return "127.0.0.1:0"


def _announce(client: Client, what: str) -> None:
    link = client.dashboard_link if _dashboard_address() else None
    where = f"; dashboard {link}" if link else ""
    print(f"Running on {what}{where}", file=sys.stderr)


def partition(source: Path, workers: int, *, folder: Path) -> list[Part]:
    """``source`` in parts of whole lines: at least ``PARTS_PER_WORKER`` per worker, none
    over ``MAX_PART_BYTES``."""
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    size = source.stat().st_size
    target = min(MAX_PART_BYTES, max(MIN_PART_BYTES, size // (PARTS_PER_WORKER * workers) + 1))
    where = source.resolve()
    return [
        Part(i, where, str(source), byte_range, folder.resolve())
        for i, byte_range in enumerate(byte_ranges(source, target))
    ]


@contextlib.contextmanager
def parts_folder(beside: Path) -> Iterator[Path]:
    """A hidden folder beside the stage's output for the part files, removed afterwards
    whatever happens (the workers write there: it must be on their shared file system)."""
    beside.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{beside.name}.parts-", dir=beside.parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_shares(
    cluster: str,
    workers: int,
    *,
    timeout_s: float,
    task: Callable[..., dict[str, Any]],
    items: Sequence[Any],
    arguments: Sequence[Any],
    description: str,
    tls: TlsFiles | None = None,
) -> list[dict[str, Any]]:
    """``task(share, *arguments)`` over :func:`shares` of ``items`` (work in memory, not in
    a file) on ``cluster``; the results in order."""
    with dask_client(cluster, workers, timeout_s=timeout_s, tls=tls) as client:
        parts = shares(items, len(client.nthreads()))
        return run_parts(
            client,
            task,
            parts=parts,
            arguments=arguments,
            description=description,
            total=len(items),
        )


class Share(list[T]):
    """A share of work in memory: a list whose repr is its length, not its contents. A
    worker logs the first 1,000 characters of a failed task's repr (distributed's "Compute
    Failed"), and a share holds texts."""

    def __repr__(self) -> str:
        return f"<share of {len(self)}>"


def shares(items: Sequence[T], workers: int) -> list[Share[T]]:
    """``items`` cut in order into about ``PARTS_PER_WORKER`` shares a worker: the parts of
    work that is in memory already (labelled texts, anonymized views), not in a file."""
    size = max(1, -(-len(items) // (PARTS_PER_WORKER * max(workers, 1))))
    return [Share(items[i : i + size]) for i in range(0, len(items), size)]


def run_parts(
    client: Client,
    task: Callable[..., dict[str, Any]],
    *,
    parts: Sequence[Any],
    arguments: Sequence[Any],
    description: str,
    total: int | None,
) -> list[dict[str, Any]]:
    """``task(part, *arguments)`` for every part (a :class:`Part` of a file, or any other
    picklable share of the work) on the cluster, each result's ``n_records`` (a record is a
    conversation) counted on a progress bar; the results in part order.

    Raises:
        the first failed task's own error (an ``InputError`` naming file and line), or
        ``BackendError`` when the workers running a task died more often than the scheduler
        allows (``distributed.scheduler.allowed-failures``: out of memory, or killed); the
        other tasks are cancelled first.
    """
    from distributed import KilledWorker, as_completed

    # The arguments (config, policy) go to the cluster once, not once per task.
    shared = [client.scatter(argument, broadcast=True) for argument in arguments]
    futures = [client.submit(task, part, *shared, pure=False) for part in parts]
    results: dict[int, dict[str, Any]] = {}
    index = {future.key: i for i, future in enumerate(futures)}
    with progress_bar(description, total or 0, unit=" conversations") as bar:
        try:
            for future in as_completed(futures):
                result = future.result()  # re-raises the task's own error
                results[index[future.key]] = result
                bar.update(int(result["n_records"]))
        except KilledWorker as exc:
            client.cancel(futures, force=True)
            raise BackendError(f"the Dask cluster: {exc}") from exc
        except BaseException:
            client.cancel(futures, force=True)
            raise
    return [results[i] for i in range(len(parts))]


def merge_parts(parts: Sequence[Part], suffix: str, *, output: Path) -> None:
    """Append each part's ``suffix`` file to ``output`` (open), in part order."""
    with output.open("ab") as merged:
        for part in parts:
            with part.output(suffix).open("rb") as piece:
                shutil.copyfileobj(piece, merged, 1 << 20)


def check_unique_ids(results: Sequence[dict[str, Any]], source: Path) -> int:
    """The records' ids unique across parts (each part checked its own); their count.

    Raises:
        InputError: naming the file and line of the second record with an id, or an empty
            corpus, as reading the file in one process would.
    """
    seen: set[str] = set()
    for result in results:
        for identifier, line in result["ids"]:
            if identifier in seen:
                raise InputError(f"{source}:{line}: duplicate id {identifier!r}")
            seen.add(identifier)
    if not seen:
        raise InputError(f"{source}: the corpus is empty (no records)")
    return len(seen)
