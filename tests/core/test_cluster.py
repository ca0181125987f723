"""Reaching a Dask scheduler (``anonymize.cluster``): a ``tcp://`` one is warned about once;
a ``tls://`` one, with certificates made here, runs a job for a client holding the
cluster's certificates and refuses any other. A real scheduler and worker, in this process."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.anonymize.config import AnonymizeConfig, ClusterTlsConfig
from components.core.cluster import Share, TlsFiles, dask_client, run_shares
from components.core.errors import BackendError, InputError, ParamsError

ROLES = ("client", "scheduler", "worker")


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    *,
    issuer: str,
    signer: ec.EllipticCurvePrivateKey,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    is_ca = subject == issuer
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if not is_ca:
        address = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        builder = builder.add_extension(x509.SubjectAlternativeName([address]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _write(
    folder: Path, name: str, *, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> None:
    (folder / f"{name}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (folder / f"{name}-key.pem").write_bytes(private)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster's CA and the certificate it signed (scheduler, worker and client share
    it); a stranger's self-signed certificate."""
    folder = tmp_path_factory.mktemp("certs")
    ca_key, node_key, stranger_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    _write(
        folder,
        "ca",
        certificate=_certificate("cluster-ca", ca_key, issuer="cluster-ca", signer=ca_key),
        key=ca_key,
    )
    _write(
        folder,
        "node",
        certificate=_certificate("node", node_key, issuer="cluster-ca", signer=ca_key),
        key=node_key,
    )
    stranger = _certificate("stranger", stranger_key, issuer="stranger", signer=stranger_key)
    _write(folder, "stranger", certificate=stranger, key=stranger_key)
    return folder


@pytest.fixture(scope="module")
def tls_scheduler(certs: Path) -> Iterator[str]:
    from distributed import LocalCluster
    from distributed.security import Security

    files = {f"tls_{role}_{kind}": str(certs / f"node{suffix}.pem") for role in ROLES
             for kind, suffix in (("cert", ""), ("key", "-key"))}  # fmt: skip
    security = Security(tls_ca_file=str(certs / "ca.pem"), require_encryption=True, **files)
    with LocalCluster(
        n_workers=1,
        processes=False,
        threads_per_worker=1,
        protocol="tls://",
        host="127.0.0.1",
        security=security,
        dashboard_address=":0",
    ) as cluster:
        yield str(cluster.scheduler_address)


def add_up(share: Share[int], offset: int) -> dict[str, int]:
    return {"n_records": len(share), "sum": sum(share) + offset}


def test_a_tls_scheduler_runs_a_job_for_a_client_with_the_cluster_certificates(
    tls_scheduler: str, certs: Path
) -> None:
    assert tls_scheduler.startswith("tls://127.0.0.1:")
    tls = TlsFiles(certs / "ca.pem", certs / "node.pem", certs / "node-key.pem")
    results = run_shares(
        tls_scheduler,
        1,
        timeout_s=10,
        task=add_up,
        items=list(range(10)),
        arguments=[0],
        description="add",
        tls=tls,
    )
    assert sum(result["sum"] for result in results) == 45


def test_a_tls_scheduler_refuses_a_client_without_the_cluster_certificates(
    tls_scheduler: str, certs: Path
) -> None:
    stranger = TlsFiles(certs / "ca.pem", certs / "stranger.pem", certs / "stranger-key.pem")
    with (
        pytest.raises(BackendError, match=rf"{tls_scheduler}.*anonymize.cluster_tls"),
        dask_client(tls_scheduler, 1, timeout_s=5, tls=stranger),
    ):
        pass
    assert refusal_without_a_certificate(tls_scheduler, certs / "ca.pem") is not None
    plaintext = tls_scheduler.replace("tls://", "tcp://")
    with pytest.raises(BackendError, match="cannot reach"), dask_client(plaintext, 1, timeout_s=5):
        pass
    with (
        pytest.raises(ParamsError, match="anonymize.cluster_tls"),
        dask_client(tls_scheduler, 1, timeout_s=5),
    ):
        pass


def refusal_without_a_certificate(address: str, ca_file: Path) -> Exception | None:
    """The error of a TLS client that trusts the cluster's CA but presents no certificate
    (Dask's own client cannot even be configured so), or None if the scheduler talked."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False  # the certificate names 127.0.0.1, not the host asked
    host, _, port = address.removeprefix("tls://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        try:
            with context.wrap_socket(raw) as connection:
                connection.sendall(b"\0" * 8)
                answer = connection.recv(1)
        except (ssl.SSLError, ConnectionError) as exc:
            return exc
    return None if answer else ConnectionError("closed without a word")


def test_a_tcp_scheduler_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1,
        processes=False,
        threads_per_worker=1,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=":0",
    ) as cluster:
        address = str(cluster.scheduler_address)
        with caplog.at_level(logging.WARNING, logger="components.core.cluster"):
            for _ in range(2):
                run_shares(
                    address,
                    1,
                    timeout_s=10,
                    task=add_up,
                    items=[1, 2, 3],
                    arguments=[0],
                    description="add",
                )
    warned = [r.getMessage() for r in caplog.records if r.name == "components.core.cluster"]
    assert len(warned) == 1, warned
    assert address in warned[0] and "salt" in warned[0] and "tls://" in warned[0]


def test_a_tls_cluster_needs_its_three_files_named_and_present(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match="anonymize.cluster_tls"):
        AnonymizeConfig(cluster="tls://scheduler:8786")
    named = ClusterTlsConfig(ca_file="ca.pem", cert="me.pem", key="me-key.pem")
    config = AnonymizeConfig(cluster="tls://scheduler:8786", cluster_tls=named)
    with pytest.raises(InputError, match=r"anonymize.cluster_tls.ca_file: .*ca.pem: no such file"):
        config.cluster_tls.files_for(config.cluster, tmp_path)
    for name in ("ca.pem", "me.pem", "me-key.pem"):
        (tmp_path / name).write_text("pem")
    files = config.cluster_tls.files_for(config.cluster, tmp_path)
    assert files == TlsFiles(tmp_path / "ca.pem", tmp_path / "me.pem", tmp_path / "me-key.pem")
    assert config.cluster_tls.files_for("tcp://scheduler:8786", tmp_path) is None


def test_a_local_cluster_admits_no_other_client() -> None:
    """`local` listens on 127.0.0.1, where any other user of the machine could connect:
    it speaks TLS with certificates made for the run, held by this process alone."""
    from distributed import Client

    with dask_client("local", 1, timeout_s=30) as client:
        address = str(client.scheduler.address)
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        with pytest.raises((OSError, TypeError)):  # plaintext, or TLS without the certificates
            Client(address.replace("tls://", "tcp://"), timeout="5s")
        with pytest.raises((OSError, TypeError)):
            Client(address, timeout="5s")
