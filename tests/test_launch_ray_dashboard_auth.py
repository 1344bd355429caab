"""A Ray dashboard behind authentication or TLS (issue 35 item 14): `--headers` (a JSON object, or
$RAY_JOB_HEADERS) and `--verify` (true, false or a CA bundle), as `ray job submit` takes them, reach every request
the launcher makes (the connection check, the nodes' listing, the upload, the submission, the log's websocket,
status, stop), on the launch and on every later command of the run (`status`, `logs`, `stop`, `report`, `rerun`).
Run records keep the headers' names with their values redacted; a later command without them stops with a one-line
hint. Through the console script, against the session's real Ray head behind a small proxy written here (stdlib
http.server) that refuses a request without the header (401), or serves TLS with a certificate made here."""

from __future__ import annotations

import http.client
import json
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .helpers import ON_RAY, REPO, sapo_launch, stand_in
from .test_launch_ray_options import error_line

SECRET = "Bearer s3cret-t0ken-for-the-proxy"
HEADERS = json.dumps({"Authorization": SECRET})
SHARED = ("--working-dir", REPO, "--shared-runs-dir")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class Proxy:
    """A reverse proxy in front of the dashboard at `upstream`, on 127.0.0.1: each request is forwarded (a websocket
    upgrade tunnelled both ways) unless `required` (a header name and value) is missing, which gets HTTP 401; with
    `tls` (a server context) it serves HTTPS. `seen` lists each request: (method, path, whether it was let through)."""

    def __init__(self, upstream: str, required: tuple[str, str] | None = None, tls: ssl.SSLContext | None = None):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.required, self.seen = required, []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
        self.server.daemon_threads = True
        self.server.proxy = self
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.address = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Proxy:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def paths(self, allowed: bool = True) -> list[str]:
        return [f"{method} {path}" for method, path, ok in self.seen if ok == allowed]


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        proxy: Proxy = self.server.proxy
        name, value = proxy.required or (None, None)
        allowed = name is None or self.headers.get(name) == value
        proxy.seen.append((self.command, self.path, allowed))
        if not allowed:
            body = b"the proxy wants an Authorization header"
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self._tunnel(proxy)
        else:
            self._forward(proxy)

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

    def _forward(self, proxy: Proxy) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(*proxy.upstream, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(key, value)
        self.send_header("Connection", "close")  # the body runs to the end of the connection: a log streams
        self.end_headers()
        while data := response.read1(64 * 1024):
            self.wfile.write(data)
            self.wfile.flush()
        upstream.close()
        self.close_connection = True

    def _tunnel(self, proxy: Proxy) -> None:
        """The log's websocket: the handshake as received, then bytes both ways until either side closes (one
        thread: an SSL socket is not read and written from two)."""
        upstream = socket.create_connection(proxy.upstream, timeout=120)
        head = [f"{self.command} {self.path} {self.request_version}\r\n"]
        head += [f"{key}: {value}\r\n" for key, value in self.headers.items()]
        upstream.sendall(("".join(head) + "\r\n").encode("latin-1"))
        client = self.connection
        try:
            while True:
                ready = [client] if isinstance(client, ssl.SSLSocket) and client.pending() else []
                if not ready:
                    ready, _, _ = select.select([client, upstream], [], [], 120)
                    if not ready:
                        return
                for source in ready:
                    data = source.recv(64 * 1024)
                    if not data:
                        return
                    (upstream if source is client else client).sendall(data)
        except OSError:
            return
        finally:
            upstream.close()
            self.close_connection = True


def quick_recipe(tmp_path: Path, **env) -> Path:
    return stand_in(tmp_path, {"FAKE_STEPS": 3, **env}, overrides=ON_RAY, name="dash")


def run_dir_of(runs: Path) -> Path:
    (run_dir,) = runs.iterdir()
    return run_dir


def files_hold(run_dir: Path, text: str) -> list[str]:
    return [str(p) for p in run_dir.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.fixture
def no_headers_env(monkeypatch):
    monkeypatch.delenv("RAY_JOB_HEADERS", raising=False)


@pytest.fixture
def auth_proxy(ray_address, no_headers_env):
    with Proxy(ray_address, required=("Authorization", SECRET)) as proxy:
        yield proxy


# -- usage -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,why",
    [
        ('{"Authorization": "Bearer s3cret"', "Invalid value for --headers: not JSON (Expecting ',' delimiter"),
        ('["Authorization", "Bearer s3cret"]', "Invalid value for --headers: a JSON array, not an object"),
        ('"Bearer s3cret"', "Invalid value for --headers: a JSON string, not an object"),
        ('{"Authorization": ["Bearer s3cret"]}', "the value of header Authorization is a JSON array, not a string"),
    ],
)
def test_a_bad_headers_value_is_a_one_line_usage_error_that_quotes_no_secret(tmp_path, value, why, no_headers_env):
    recipe = quick_recipe(tmp_path)
    for args in (
        (recipe, "--address", "head:8265", "--dry-run", "--headers", value),
        ("status", tmp_path, "--headers", value),  # every command that talks to a cluster checks it alike
    ):
        proc = sapo_launch(*args)
        assert proc.returncode == 2, proc.stderr
        line = error_line(proc.stderr)
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
        assert why in line
        assert "s3cret" not in proc.stderr


def test_a_bad_ray_job_headers_is_named_and_headers_need_an_address(tmp_path, no_headers_env):
    recipe = quick_recipe(tmp_path)
    proc = sapo_launch(recipe, "--address", "head:8265", "--dry-run", env={"RAY_JOB_HEADERS": "Bearer s3cret"})
    assert proc.returncode == 2
    assert error_line(proc.stderr).startswith("sapo-launch: Invalid value for $RAY_JOB_HEADERS: not JSON")
    assert "s3cret" not in proc.stderr
    local = sapo_launch(recipe, "--headers", HEADERS, "--verify", "false", "--dry-run")
    assert local.returncode == 2
    assert error_line(local.stderr) == "sapo-launch: --headers, --verify need --address (a Ray cluster)"
    # Set for `ray job submit`, the variable does not stop a launch on this machine.
    here = sapo_launch(recipe, "--dry-run", env={"RAY_JOB_HEADERS": HEADERS})
    assert here.returncode == 0, here.stderr
    missing = sapo_launch(recipe, "--address", "head:8265", "--verify", tmp_path / "no-ca.pem", "--dry-run")
    assert missing.returncode == 2
    assert "Invalid value for --verify" in error_line(missing.stderr)


def test_the_dry_run_shows_the_headers_redacted_and_the_verification(tmp_path, no_headers_env):
    recipe = quick_recipe(tmp_path)
    ca = tmp_path / "ca.pem"
    ca.write_text("not read by a dry run")
    headers = json.dumps({"Authorization": SECRET, "X-Api-Key": "k3y", "Accept": "application/json"})
    proc = sapo_launch(
        recipe, "--address", "head:8265", "--headers", headers, "--verify", ca, "--dry-run", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)["ray"]
    assert shown["headers"] == {"Authorization": "<redacted>", "X-Api-Key": "<redacted>", "Accept": "application/json"}
    assert shown["verify"] == str(ca.resolve())
    text = sapo_launch(recipe, "--address", "head:8265", "--dry-run", env={"RAY_JOB_HEADERS": headers})
    assert '  headers  {"Authorization": "<redacted>", "X-Api-Key": "<redacted>"' in text.stdout
    assert "s3cret" not in proc.stdout + text.stdout and "k3y" not in proc.stdout + text.stdout


# -- behind a proxy that wants a header ------------------------------------------------------------------------------


def test_headers_reach_every_request_of_a_run_and_are_never_recorded(tmp_path, auth_proxy):
    recipe = quick_recipe(tmp_path)
    refused = sapo_launch(recipe, "--address", auth_proxy.address, *SHARED, "--runs-dir", tmp_path / "refused")
    assert refused.returncode == 2, refused.stderr
    line = error_line(refused.stderr)
    assert f"cannot reach the Ray Jobs API at {auth_proxy.address}" in line
    assert 'pass --headers \'{"Authorization": "Bearer TOKEN"}\' or set RAY_JOB_HEADERS' in line
    assert auth_proxy.paths() == []

    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, "--address", auth_proxy.address, "--headers", HEADERS, *SHARED, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    assert auth_proxy.paths(allowed=False) == ["GET /api/version"]  # the refused launch's only request
    allowed = auth_proxy.paths()
    for request in ("GET /api/version", "GET /api/v0/nodes", "POST /api/jobs/", "/logs/tail"):
        assert any(request in seen for seen in allowed), (request, allowed)
    run_dir = run_dir_of(runs)
    job = json.loads((run_dir / "job.json").read_text())
    assert job["headers"] == {"Authorization": "<redacted>"}
    assert "verify" not in job  # Ray's default: verified
    assert "step:3" in (run_dir / "train.log").read_text()
    assert files_hold(run_dir, "s3cret") == []

    # Later commands: the value comes from --headers or $RAY_JOB_HEADERS, or a one-line hint says so.
    hint = (
        f"sapo-launch: {run_dir}/job.json records the dashboard's header Authorization without its value: "
        'pass --headers \'{"Authorization": "..."}\' or set RAY_JOB_HEADERS'
    )
    for command in ("status", "logs", "stop"):
        without = sapo_launch(command, run_dir)
        assert without.returncode == 2, without.stderr
        assert error_line(without.stderr) == hint
    before = len(auth_proxy.seen)
    status = sapo_launch("status", run_dir, env={"RAY_JOB_HEADERS": HEADERS})
    assert status.returncode == 0, status.stderr
    assert " SUCCEEDED" in status.stdout
    logs = sapo_launch("logs", run_dir, "--headers", HEADERS)
    assert logs.returncode == 0, logs.stderr
    assert "step:3" in logs.stdout
    follow = sapo_launch("logs", "-f", run_dir, "--headers", HEADERS)
    assert follow.returncode == 0, follow.stderr
    stop = sapo_launch("stop", run_dir, env={"RAY_JOB_HEADERS": HEADERS})
    assert stop.returncode == 0, stop.stderr
    assert len(auth_proxy.seen) > before and auth_proxy.paths(allowed=False) == ["GET /api/version"]

    # rerun: the same cluster, the headers again from the command line or the environment; recorded redacted.
    rerun_refused = sapo_launch("rerun", run_dir, "--runs-dir", tmp_path / "reruns")
    assert rerun_refused.returncode == 2
    assert error_line(rerun_refused.stderr) == hint
    rerun = sapo_launch("rerun", run_dir, "--runs-dir", tmp_path / "reruns", env={"RAY_JOB_HEADERS": HEADERS})
    assert rerun.returncode == 0, rerun.stderr
    again = run_dir_of(tmp_path / "reruns")
    assert json.loads((again / "job.json").read_text())["headers"] == {"Authorization": "<redacted>"}
    assert files_hold(again, "s3cret") == [] and files_hold(run_dir, "s3cret") == []
    assert auth_proxy.paths(allowed=False) == ["GET /api/version"]


@pytest.mark.slow  # ~40 s on the Ray head; the default command's headers test follows a run through it
def test_a_detached_run_is_stopped_and_reported_with_its_headers(tmp_path, auth_proxy):
    recipe = stand_in(tmp_path, {"FAKE_STEPS": 300, "FAKE_SLEEP": 0.2}, overrides=ON_RAY, name="dash")
    runs = tmp_path / "runs"
    proc = sapo_launch(
        recipe, "--address", auth_proxy.address, "--headers", HEADERS, *SHARED, "--runs-dir", runs, "--detach"
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = run_dir_of(runs)
    deadline = time.monotonic() + 90
    while not (run_dir / "metrics.jsonl").is_file() or not (run_dir / "metrics.jsonl").read_text():
        assert time.monotonic() < deadline, "the job wrote no step"
        time.sleep(0.2)
    # report asks the cluster first: without the header it says why and reports what the directory holds.
    unasked = sapo_launch("report", run_dir)
    assert unasked.returncode == 0, unasked.stderr
    assert "records the dashboard's header Authorization without its value" in unasked.stderr
    asked = sapo_launch("report", run_dir, "--headers", HEADERS)
    assert asked.returncode == 0, asked.stderr
    stop = sapo_launch("stop", run_dir, "--headers", HEADERS)
    assert stop.returncode == 0, stop.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["job_status"] == "STOPPED"
    assert any(seen.startswith("POST /api/jobs/") and seen.endswith("/stop") for seen in auth_proxy.paths())
    assert auth_proxy.paths(allowed=False) == []
    assert files_hold(run_dir, "s3cret") == []


# -- behind TLS ------------------------------------------------------------------------------------------------------


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A certificate authority and a server certificate for 127.0.0.1 it signed: (ca.pem, server.pem, server.key),
    with the `cryptography` package, else the openssl command; skipped without either."""
    try:
        return _with_cryptography(folder)
    except ImportError:
        pass
    if shutil.which("openssl"):
        return _with_openssl(folder)
    pytest.skip("neither the cryptography package nor the openssl command is installed")


def _with_cryptography(folder: Path) -> tuple[Path, Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sapo-launch test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital_signature, key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def _with_openssl(folder: Path) -> tuple[Path, Path, Path]:
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    server, key, request = folder / "server.pem", folder / "server.key", folder / "server.csr"
    extensions = folder / "server.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for command in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=sapo-launch test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", *ec, "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", server, "-days", "1",
         "-extfile", extensions],
    ):  # fmt: skip
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True, cwd=folder)
    return ca, server, key


@pytest.fixture
def tls_proxy(ray_address, tmp_path, no_headers_env):
    folder = tmp_path / "tls"
    folder.mkdir()
    ca, server, key = make_certificates(folder)
    with Proxy(ray_address, tls=server_context(server, key)) as proxy:
        yield proxy, ca


def server_context(server: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server, key)
    return context


def test_the_openssl_certificates_verify_as_the_cryptography_ones(tmp_path):
    """The fallback without the cryptography package: its certificate authority verifies its server's."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl command")
    ca, server, key = _with_openssl(tmp_path)
    with Proxy("http://127.0.0.1:1", tls=server_context(server, key)) as proxy:
        port = urlsplit(proxy.address).port
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            with ssl.create_default_context(cafile=str(ca)).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.version()


def test_tls_is_verified_against_the_ca_given_or_not_at_all(tmp_path, tls_proxy):
    proxy, ca = tls_proxy
    assert proxy.address.startswith("https://")
    recipe = quick_recipe(tmp_path)
    unverified = sapo_launch(recipe, "--address", proxy.address, *SHARED, "--runs-dir", tmp_path / "unverified")
    assert unverified.returncode == 2, unverified.stderr
    line = error_line(unverified.stderr)
    assert line.startswith(f"sapo-launch: cannot reach the Ray Jobs API at {proxy.address}: "), line
    assert line.endswith(
        "(TLS: unable to get local issuer certificate; pass --verify CA_FILE, the certificate authority that signed "
        "the dashboard's certificate, or --verify false)"
    )

    runs = tmp_path / "runs"
    proc = sapo_launch(recipe, "--address", proxy.address, "--verify", ca, *SHARED, "--runs-dir", runs)
    assert proc.returncode == 0, proc.stderr
    for request in ("GET /api/version", "GET /api/v0/nodes", "POST /api/jobs/", "/logs/tail"):
        assert any(request in seen for seen in proxy.paths()), (request, proxy.paths())
    run_dir = run_dir_of(runs)
    assert json.loads((run_dir / "job.json").read_text())["verify"] == str(ca.resolve())
    assert "step:3" in (run_dir / "train.log").read_text()
    # A later command verifies against the recorded CA bundle; --verify goes over it.
    status = sapo_launch("status", run_dir)
    assert status.returncode == 0, status.stderr
    assert " SUCCEEDED" in status.stdout
    assert sapo_launch("logs", run_dir, "--verify", "true").returncode == 2

    insecure = sapo_launch(
        recipe,
        "--address",
        proxy.address,
        "--verify",
        "false",
        *SHARED,
        "--runs-dir",
        tmp_path / "insecure",
        "--detach",
    )
    assert insecure.returncode == 0, insecure.stderr
    assert "InsecureRequestWarning" not in insecure.stderr and "Unverified HTTPS request" not in insecure.stderr
    assert json.loads((run_dir_of(tmp_path / "insecure") / "job.json").read_text())["verify"] is False
