"""Decode whale's TensorBoard event files with python3-protobuf against our
own .proto (core/tfevent/testdata/tfevent.proto), independently of the Go
reader: print one JSON line per scalar {file, step, wall_time, tag, value}.

usage: decode_events.py PROTO FILE...

The .proto is read by a small parser of the proto3 subset it uses
(messages, nested messages, oneofs, scalar and message fields), so no
protoc is needed; exit status 3 when google.protobuf is missing."""
import json
import re
import struct
import sys

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError:
    sys.stderr.write("python3-protobuf is not installed (apt-get install python3-protobuf)\n")
    sys.exit(3)

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "int32": F.TYPE_INT32,
           "uint64": F.TYPE_UINT64, "bool": F.TYPE_BOOL, "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES}


def tokens(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.findall(r'"[^"]*"|[A-Za-z_][A-Za-z0-9_.]*|\d+|[{}=;]', text)


def parse(text):
    toks = tokens(text)
    fdp = descriptor_pb2.FileDescriptorProto(name="tfevent.proto", syntax="proto3")
    pending = []  # (field, scope, type name) to resolve once every message is known
    known = set()

    def expect(t):
        got = toks.pop(0)
        if got != t:
            raise SystemExit("proto: got %r, want %r" % (got, t))

    def message(msg, scope):
        full = scope + "." + msg.name
        known.add(full)
        expect("{")
        while toks[0] != "}":
            t = toks.pop(0)
            if t == "message":
                message(msg.nested_type.add(name=toks.pop(0)), full)
            elif t == "oneof":
                idx = len(msg.oneof_decl)
                msg.oneof_decl.add(name=toks.pop(0))
                expect("{")
                while toks[0] != "}":
                    field(msg, full, toks.pop(0), F.LABEL_OPTIONAL, idx)
                expect("}")
            elif t == "repeated":
                field(msg, full, toks.pop(0), F.LABEL_REPEATED, None)
            else:
                field(msg, full, t, F.LABEL_OPTIONAL, None)
        expect("}")

    def field(msg, scope, typ, label, oneof):
        name = toks.pop(0)
        expect("=")
        f = msg.field.add(name=name, number=int(toks.pop(0)), label=label)
        expect(";")
        if oneof is not None:
            f.oneof_index = oneof
        if typ in SCALARS:
            f.type = SCALARS[typ]
        else:
            f.type = F.TYPE_MESSAGE
            pending.append((f, scope, typ))

    while toks:
        t = toks.pop(0)
        if t in ("syntax", "option"):
            while toks.pop(0) != ";":
                pass
        elif t == "package":
            fdp.package = toks.pop(0)
            expect(";")
        elif t == "message":
            message(fdp.message_type.add(name=toks.pop(0)), "." + fdp.package)
        else:
            raise SystemExit("proto: unexpected %r" % t)
    for f, scope, typ in pending:
        s = scope
        while True:
            cand = s + "." + typ
            if cand in known:
                f.type_name = cand
                break
            if s.count(".") <= 1:
                raise SystemExit("proto: unknown type %s" % typ)
            s = s.rsplit(".", 1)[0]
    return fdp


def event_class(proto_path):
    pool = descriptor_pool.DescriptorPool()
    fdp = parse(open(proto_path).read())
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName(fdp.package + ".Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off < len(data):
        (n,) = struct.unpack_from("<Q", data, off)
        off += 12
        yield data[off:off + n]
        off += n + 4


def main():
    Event = event_class(sys.argv[1])
    for path in sys.argv[2:]:
        first = True
        for rec in records(path):
            ev = Event()
            ev.ParseFromString(rec)
            if first:
                if ev.WhichOneof("what") != "file_version":
                    raise SystemExit("%s: first record is not the file version" % path)
                print(json.dumps({"file": path, "file_version": ev.file_version, "wall_time": ev.wall_time}))
                first = False
                continue
            for v in ev.summary.value:
                print(json.dumps({"file": path, "step": ev.step, "wall_time": ev.wall_time, "tag": v.tag,
                                  "value": v.simple_value}))


if __name__ == "__main__":
    main()
