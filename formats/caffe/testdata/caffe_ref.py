"""Independent reference for godali's Caffe/Caffe2 readers: builds caffe.Datum and
caffe2.TensorProtos messages with the protobuf package (message classes made at run
time from descriptor_pb2, no generated code, nothing from godali) and writes them with
the PyPI lmdb package.

usage:
  caffe_ref.py messages            -> JSON list of {kind, b64, fields} on stdout
  caffe_ref.py caffe  DB FILE...   -> LMDB of Datums (encoded FILE bytes, label i%5, one raw
                                      HWC datum last); JSON of what each key holds
  caffe_ref.py caffe2 DB FILE...   -> LMDB of TensorProtos [image STRING, label INT32,
                                      extra FLOAT]; JSON of what each key holds
"""
import base64, json, random, sys

from google.protobuf import descriptor_pb2, descriptor_pool
try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:  # protobuf < 4.21
    from google.protobuf import message_factory
    def GetMessageClass(d):
        return message_factory.MessageFactory().GetPrototype(d)

F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name, num, typ, label=F.LABEL_OPTIONAL, packed=None, type_name=None, default=None):
    f = msg.field.add(name=name, number=num, type=typ, label=label)
    if packed is not None:
        f.options.packed = packed
    if type_name:
        f.type_name = type_name
    if default is not None:
        f.default_value = default


def _classes():
    fd = descriptor_pb2.FileDescriptorProto(name="godali_ref_caffe.proto", package="ref", syntax="proto2")
    d = fd.message_type.add(name="Datum")
    _field(d, "channels", 1, F.TYPE_INT32)
    _field(d, "height", 2, F.TYPE_INT32)
    _field(d, "width", 3, F.TYPE_INT32)
    _field(d, "data", 4, F.TYPE_BYTES)
    _field(d, "label", 5, F.TYPE_INT32)
    _field(d, "float_data", 6, F.TYPE_FLOAT, F.LABEL_REPEATED)  # caffe: not packed
    _field(d, "encoded", 7, F.TYPE_BOOL, default="false")
    t = fd.message_type.add(name="TensorProto")
    _field(t, "dims", 1, F.TYPE_INT64, F.LABEL_REPEATED)
    _field(t, "data_type", 2, F.TYPE_INT32, default="1")
    _field(t, "float_data", 3, F.TYPE_FLOAT, F.LABEL_REPEATED, packed=True)
    _field(t, "int32_data", 4, F.TYPE_INT32, F.LABEL_REPEATED, packed=True)
    _field(t, "byte_data", 5, F.TYPE_BYTES)
    _field(t, "string_data", 6, F.TYPE_BYTES, F.LABEL_REPEATED)
    _field(t, "name", 7, F.TYPE_STRING)
    _field(t, "double_data", 9, F.TYPE_DOUBLE, F.LABEL_REPEATED, packed=True)
    _field(t, "int64_data", 10, F.TYPE_INT64, F.LABEL_REPEATED, packed=True)
    ts = fd.message_type.add(name="TensorProtos")
    _field(ts, "protos", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, type_name=".ref.TensorProto")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    get = lambda n: GetMessageClass(pool.FindMessageTypeByName("ref." + n))
    return get("Datum"), get("TensorProto"), get("TensorProtos")


Datum, TensorProto, TensorProtos = _classes()
b64 = lambda b: base64.b64encode(b).decode()


def messages():
    rng = random.Random(7)
    out = []
    for i in range(20):
        d = Datum()
        fields = {}
        if i % 4 != 3:
            n = rng.randrange(0, 300)
            d.data = bytes(rng.randrange(256) for _ in range(n))
            fields["data"] = b64(d.data)
        if i % 3 != 2:
            d.label = rng.randrange(-5, 1 << 20)
            fields["label"] = d.label
        if i % 2:
            d.channels, d.height, d.width = 3, rng.randrange(1, 9), rng.randrange(1, 9)
            fields.update(channels=d.channels, height=d.height, width=d.width)
        if i % 5 == 1:
            d.encoded = bool(i % 10 == 1)
            fields["encoded"] = d.encoded
        if i % 6 == 0:
            d.float_data.extend(rng.uniform(-10, 10) for _ in range(rng.randrange(1, 6)))
            fields["float_data"] = list(d.float_data)
        out.append({"kind": "datum", "b64": b64(d.SerializeToString()), "fields": fields})
    for i in range(20):
        ts = TensorProtos()
        fl = []
        for j in range(rng.randrange(0, 5)):
            t = ts.protos.add()
            f = {}
            k = rng.randrange(6)
            if k == 0:
                t.data_type = 4; t.string_data.append(bytes(rng.randrange(256) for _ in range(rng.randrange(50))))
                f["string_data"] = [b64(s) for s in t.string_data]
            elif k == 1:
                t.data_type = 3; t.dims.extend([2, 3, 3]); t.byte_data = bytes(rng.randrange(256) for _ in range(18))
                f["byte_data"] = b64(t.byte_data)
            elif k == 2:
                t.data_type = 2; t.int32_data.extend(rng.randrange(-(1 << 31), 1 << 31) for _ in range(rng.randrange(1, 9)))
                f["int32_data"] = list(t.int32_data)
            elif k == 3:
                t.float_data.extend(rng.uniform(-1e3, 1e3) for _ in range(rng.randrange(1, 9)))
                f["float_data"] = list(t.float_data)
            elif k == 4:
                t.data_type = 10; t.int64_data.extend(rng.randrange(-(1 << 62), 1 << 62) for _ in range(rng.randrange(1, 5)))
                f["int64_data"] = list(t.int64_data)
            else:
                t.data_type = 13; t.double_data.extend(rng.uniform(-1, 1) for _ in range(3)); t.name = "d%d" % j
                f["double_data"] = list(t.double_data); f["name"] = t.name
            f["data_type"] = t.data_type if t.HasField("data_type") else 1
            f["dims"] = list(t.dims)
            fl.append(f)
        out.append({"kind": "protos", "b64": b64(ts.SerializeToString()), "fields": fl})
    json.dump(out, sys.stdout)


def write_db(path, items):
    import lmdb
    env = lmdb.open(path, map_size=1 << 28)
    with env.begin(write=True) as txn:
        for k, v in items:
            txn.put(k, v)
    env.close()


def caffe(db, files):
    items, exp = [], {}
    for i, f in enumerate(files):
        d = Datum(data=open(f, "rb").read(), label=i % 5, encoded=True)
        k = b"%08d_%s" % (i, f.rsplit("/", 1)[-1].encode())
        items.append((k, d.SerializeToString()))
        exp[k.decode()] = {"file": f, "label": i % 5}
    # a raw (not encoded) datum: caffe stores it CHW, DALI hands it out as [H, W, C]
    raw = bytes(range(2 * 3 * 3))
    d = Datum(channels=3, height=2, width=3, data=raw, label=9, encoded=False)
    k = b"%08d_raw" % len(files)
    items.append((k, d.SerializeToString()))
    exp[k.decode()] = {"raw": b64(raw), "shape": [2, 3, 3], "label": 9}
    write_db(db, items)
    json.dump(exp, sys.stdout)


def caffe2(db, files):
    items, exp = [], {}
    for i, f in enumerate(files):
        ts = TensorProtos()
        img = ts.protos.add(data_type=4)
        img.string_data.append(open(f, "rb").read())
        lab = ts.protos.add(data_type=2)
        lab.int32_data.append(i % 7)
        extra = ts.protos.add(data_type=1)
        extra.float_data.extend([i + 0.5, -i * 0.25])
        k = b"k%05d" % i
        items.append((k, ts.SerializeToString()))
        exp[k.decode()] = {"file": f, "label": i % 7, "extra": [i + 0.5, -i * 0.25]}
    write_db(db, items)
    json.dump(exp, sys.stdout)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "messages":
        messages()
    elif cmd == "caffe":
        caffe(sys.argv[2], sys.argv[3:])
    elif cmd == "caffe2":
        caffe2(sys.argv[2], sys.argv[3:])
