"""Azurite (Azure Blob) and fake-gcs-server (GCS) on loopback, for the az:// and gs://
tests and `godali bench-remote`: where scripts/setup.sh installs them, how to start
them, how to upload objects (Azure requests signed with Shared Key, written here from
Microsoft's description independently of godali's Go signer, which Azurite checks
alike), and the environment that points godali at them.

Standard library only; it does not import godali (a bench trial that forks must not
load the Go runtime first)."""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import json
import os
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

AZURITE_DIR = "/usr/local/lib/godali-azurite/node_modules/.bin"
FAKE_GCS_DIR = "/usr/local/lib/godali-gcs"
AZURITE_ACCOUNT = "devstoreaccount1"
# The emulators' well-known account key (public, documented by Microsoft).
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTO"
               "tr/KBHBeksoGMGw==")


def _find(name: str, directory: str):
    p = shutil.which(name)
    if p:
        return p
    p = os.path.join(directory, name)
    return p if os.path.isfile(p) and os.access(p, os.X_OK) else None


def azurite_binary():
    """The azurite-blob command, or None."""
    return _find("azurite-blob", AZURITE_DIR)


def fake_gcs_binary():
    """The fake-gcs-server command, or None."""
    return _find("fake-gcs-server", FAKE_GCS_DIR)


def free_port() -> int:
    """A free TCP port on loopback for a server to listen on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc, limit: float = 60):
    """wait_http returns once the server proc started answers url (any HTTP status),
    and raises when it exits or says nothing within limit seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server for {url} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no answer from {url} within {limit:.0f} s")


def azurite_command(port: int, location: str) -> list:
    return [azurite_binary(), "--blobHost", "127.0.0.1", "--blobPort", str(port),
            "--location", location, "--silent", "--skipApiVersionCheck"]


def fake_gcs_command(port: int) -> list:
    return [fake_gcs_binary(), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
            "-backend", "memory", "-log-level", "error",
            "-public-host", f"127.0.0.1:{port}"]


def azure_env(endpoint: str) -> dict:
    """Environment for az:// URLs on the emulator at endpoint (…/devstoreaccount1)."""
    return {"AZURE_STORAGE_ACCOUNT": AZURITE_ACCOUNT, "AZURE_STORAGE_KEY": AZURITE_KEY,
            "AZURE_STORAGE_SERVICE_ENDPOINT": endpoint,
            "AZURE_STORAGE_CONNECTION_STRING": "", "AZURE_STORAGE_SAS_TOKEN": "",
            "GODALI_AZURE_STORAGE_TOKEN": ""}


def gcs_env(endpoint: str) -> dict:
    """Environment for gs:// URLs on the emulator at endpoint (anonymous)."""
    return {"STORAGE_EMULATOR_HOST": endpoint, "GOOGLE_OAUTH_ACCESS_TOKEN": "",
            "GOOGLE_APPLICATION_CREDENTIALS": ""}


def _azure_authorization(method: str, url: str, headers: dict, key: str,
                         account: str) -> str:
    """The Shared Key Authorization value (Blob service, x-ms-date given)."""
    h = {k.lower(): v for k, v in headers.items()}
    length = h.get("content-length", "")
    if length == "0":
        length = ""
    lines = [method, h.get("content-encoding", ""), h.get("content-language", ""), length,
             h.get("content-md5", ""), h.get("content-type", ""), "",
             h.get("if-modified-since", ""), h.get("if-match", ""),
             h.get("if-none-match", ""), h.get("if-unmodified-since", ""),
             h.get("range", "")]
    canon_headers = "".join(f"{k}:{' '.join(str(v).split())}\n"
                            for k, v in sorted(h.items()) if k.startswith("x-ms-"))
    u = urllib.parse.urlsplit(url)
    resource = f"/{account}{u.path}"
    q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
    for k in sorted(q, key=str.lower):
        resource += f"\n{k.lower()}:{','.join(sorted(q[k]))}"
    to_sign = "\n".join(lines) + "\n" + canon_headers + resource
    sig = hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()
    return f"SharedKey {account}:{base64.b64encode(sig).decode()}"


def _send(req, ok_conflict=True):
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
    except urllib.error.HTTPError as e:
        if not (ok_conflict and e.code == 409):
            raise RuntimeError(f"{req.get_method()} {req.full_url}: HTTP {e.code}: "
                               f"{e.read()[:300]!r}") from None


def azure_put(endpoint: str, container: str, objects: dict):
    """Creates container (if new) and uploads objects {name: bytes} to Azurite."""
    def put(path, body, extra=None):
        url = endpoint + path
        headers = {"x-ms-date": email.utils.formatdate(usegmt=True),
                   "x-ms-version": "2021-08-06", "Content-Length": str(len(body)),
                   # Set (and signed) here: urllib would add a form content type.
                   "Content-Type": "application/octet-stream"}
        headers.update(extra or {})
        headers["Authorization"] = _azure_authorization("PUT", url, headers, AZURITE_KEY,
                                                        AZURITE_ACCOUNT)
        _send(urllib.request.Request(url, data=body, method="PUT", headers=headers))
    put(f"/{container}?restype=container", b"")
    for name, body in objects.items():
        put(f"/{container}/{urllib.parse.quote(name)}", body, {"x-ms-blob-type": "BlockBlob"})


def gcs_put(endpoint: str, bucket: str, objects: dict):
    """Creates bucket (if new) and uploads objects {name: bytes} to fake-gcs-server."""
    _send(urllib.request.Request(endpoint + "/storage/v1/b", method="POST",
                                 data=json.dumps({"name": bucket}).encode(),
                                 headers={"Content-Type": "application/json"}))
    for name, body in objects.items():
        url = (f"{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media&name="
               + urllib.parse.quote(name, safe=""))
        _send(urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/octet-stream"}))
