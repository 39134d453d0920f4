"""URL secrets never reach the host through the C ABI: a password and presigned query
values in a file_list URL are redacted in the exception a failed build raises, and a
remote file_list may not name local files (issue 16)."""

import http.server
import threading

import pytest

from godali import fn, pipeline_def


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server of tmp_path."""
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path), **k)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.RequestHandlerClass.log_message = lambda *a: None
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1], tmp_path
    httpd.shutdown()
    httpd.server_close()


def _build(file_list, **kw):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        data, label = fn.readers.file(file_list=file_list, io_timeout=0.5, **kw)
        return data, label

    p = pipe()
    p.build()
    return p


def test_build_error_hides_url_secrets(server):
    base, _ = server
    url = base.replace("http://", "http://alice:PASSWORD-not-shown@") + \
        "/missing/list.txt?X-Amz-Signature=SIG-not-shown&X-Amz-Security-Token=TOK-not-shown"
    with pytest.raises(Exception) as e:
        _build(url)
    msg = str(e.value)
    assert "/missing/list.txt" in msg and "alice:xxxxx@" in msg, msg
    for secret in ("PASSWORD-not-shown", "SIG-not-shown", "TOK-not-shown"):
        assert secret not in msg, msg


def test_remote_file_list_cannot_name_local_files(server, tmp_path_factory):
    base, root = server
    local = tmp_path_factory.mktemp("local") / "secret.jpg"
    local.write_bytes(b"local bytes")
    (root / "list.txt").write_text("%s 0\n" % local)
    with pytest.raises(Exception) as e:
        _build(base + "/list.txt")
    assert str(local) in str(e.value) and "allow_outside_root" in str(e.value), str(e.value)
    p = _build(base + "/list.txt", allow_outside_root=True)
    data, _ = p.run()
    assert bytes(data.at(0)) == b"local bytes"
