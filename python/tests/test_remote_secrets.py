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


# Issue 24, item 5: checkpoints, source_info and refusals hold no URL secret; a
# checkpoint restores after the URLs were signed again and is refused, naming the
# object, when a URL names another one.

def _signed(kind, base, path, version):
    v = "v%d-SECRET" % version
    if kind == "password":
        return base.replace("http://", "http://alice:PW-%s@" % v) + path
    if kind == "s3":
        return (base + path + "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA-%s"
                "%%2F20261124%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=2026112%dT000000Z"
                "&X-Amz-Expires=%d&X-Amz-SignedHeaders=host&X-Amz-Security-Token=STS-%s"
                "&X-Amz-Signature=SIG-%s" % (v, version, 600 * version, v, v))
    if kind == "gcs":
        return (base + path + "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=SA-%s"
                "&X-Goog-Date=2026112%dT000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
                "&X-Goog-Signature=SIG-%s" % (v, version, v))
    if kind == "azure":
        return base + path + "?sv=2022-11-02&sp=r&se=2026-12-0%dT00:00:00Z&sig=SIG-%s" % (version, v)
    if kind == "token":
        return base + path + "?token=T-%s&access_token=AT-%s&key=K-%s&apikey=AK-%s" % (v, v, v, v)
    raise ValueError(kind)


def _ckpt_pipe(urls, checkpoint=None):
    @pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=3,
                  enable_checkpointing=True, checkpoint=checkpoint)
    def pipe():
        data, label = fn.readers.file(files=urls, random_shuffle=True, initial_fill=3,
                                      name="Reader")
        return data, label, fn.get_property(data, key="source_info")

    p = pipe()
    p.build()
    return p


@pytest.mark.parametrize("kind", ["password", "s3", "gcs", "azure", "token"])
def test_checkpoint_holds_no_url_secret_and_survives_resigning(server, tmp_path, kind):
    base, root = server
    (root / "d").mkdir()
    for i in range(8):
        (root / "d" / ("f%d.bin" % i)).write_bytes(b"bytes of %d" % i)
    (root / "d" / "other.bin").write_bytes(b"another object")
    names = ["/d/f%d.bin" % i for i in range(8)]
    a = _ckpt_pipe([_signed(kind, base, n, 1) for n in names])
    for _ in range(2):
        _, _, info = a.run()
        for i in range(len(info)):
            s = bytes(info.at(i)).decode()
            assert "/d/f" in s and "SECRET" not in s, s
    path = tmp_path / "ckpt.json"
    text = a.checkpoint(str(path))
    assert "SECRET" not in text and b"SECRET" not in path.read_bytes()
    assert "/d/f3.bin" in text
    assert "SECRET" not in repr(a)
    data, labels, _ = a.run()
    want = [bytes(data.at(i)) for i in range(len(data))], labels.as_array().tolist()

    b = _ckpt_pipe([_signed(kind, base, n, 2) for n in names], checkpoint=text)
    data, labels, _ = b.run()
    assert ([bytes(data.at(i)) for i in range(len(data))], labels.as_array().tolist()) == want

    other = list(names)
    other[3] = "/d/other.bin"
    with pytest.raises(Exception) as e:
        _ckpt_pipe([_signed(kind, base, n, 2) for n in other], checkpoint=text)
    msg = str(e.value)
    assert "SECRET" not in msg, msg
    assert 'entry 3 of argument "files" of reader "Reader"' in msg, msg
    assert base + "/d/f3.bin" in msg and base + "/d/other.bin" in msg, msg
