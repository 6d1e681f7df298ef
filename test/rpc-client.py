#!/usr/bin/python3
"""A CRIU RPC client for the tests, speaking through CRIU's own generated
module (pycriu.rpc_pb2, Debian's criu package): what runc and go-criu send.

  rpc-client.py [options] MEMDUMP TYPE [field=value ...]

Starts MEMDUMP swrk FD (as argv[0] --argv0) on a SOCK_SEQPACKET socketpair,
sends one criu_req of TYPE (VERSION, CHECK, DUMP, ...) with criu_opts set
from field=value (images_dir=PATH opens PATH here and passes images_dir_fd,
work_dir=PATH likewise; image_key=PATH opens PATH and passes its fd as memdump's
field 1000, image_key_fd, which CRIU's module does not know; ints and true/false as such; repeated fields as a
comma list, key:val for messages, ps=port:P,address:A), answers each NOTIFY, and prints one line per message:

  NOTIFY <script> pid=<pid>
  RESP type=<type> success=<bool> errno=<n> pid=<pid> msg=<cr_errmsg>
  VERSION major=.. minor=.. name=.. gitid=..
  FEATURES mem_track=.. lazy_pages=.. pidfd_store=..
  EXIT <memdump's exit status>

Options:
  --fail-at NAME  answer the NOTIFY NAME with notify_success false
  --die-at NAME   on the NOTIFY NAME, exit (99) at once without an answer
  --die-after S   exit (99) S seconds after sending the request
  --raw FILE      send FILE's bytes as the request instead
  --keep-open     set keep_open (then send a VERSION request too)
  --argv0 NAME    argv[0] for memdump (e.g. criu)
Exit status 0 when the last response says success.
"""
import os
import socket
import subprocess
import sys
import time

from pycriu import rpc_pb2 as rpc


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)


def set_opt(opts, kv):
    name, _, val = kv.partition("=")
    if name == "image_key":     # field 1000, varint: kept as an unknown field
        fd = os.open(val, os.O_RDONLY)
        opts.MergeFromString(varint(1000 << 3) + varint(fd))
        return
    if name in ("images_dir", "work_dir"):
        fd = os.open(val, os.O_RDONLY | os.O_DIRECTORY)
        setattr(opts, name + "_fd", fd)
        return
    field = opts.DESCRIPTOR.fields_by_name[name]
    if field.label == field.LABEL_REPEATED and field.type == field.TYPE_MESSAGE:
        for item in val.split(","):     # key:val, key:val ... into the first two fields
            m = getattr(opts, name).add()
            for f, v in zip(m.DESCRIPTOR.fields, item.split(":", 1)):
                setattr(m, f.name, int(v) if f.type == f.TYPE_INT32 else v)
    elif field.type == field.TYPE_MESSAGE:    # key:val, key:val ... into its fields
        m = getattr(opts, name)
        for item in val.split(","):
            k, _, v = item.partition(":")
            f = m.DESCRIPTOR.fields_by_name[k]
            setattr(m, k, int(v) if f.type == f.TYPE_INT32 else v)
    elif field.label == field.LABEL_REPEATED:
        getattr(opts, name).extend(val.split(","))
    elif field.type == field.TYPE_BOOL:
        setattr(opts, name, val == "true")
    elif field.type == field.TYPE_STRING:
        setattr(opts, name, val)
    elif field.type == field.TYPE_ENUM:
        setattr(opts, name, field.enum_type.values_by_name[val].number)
    else:
        setattr(opts, name, int(val))


def say(line):
    print(line, flush=True)


def show(resp):
    t = rpc.criu_req_type.Name(resp.type) if resp.type in rpc.criu_req_type.values() else resp.type
    pid = resp.restore.pid if resp.HasField("restore") else ""
    msg = resp.cr_errmsg.replace("\n", "\\n")
    say(f"RESP type={t} success={resp.success} errno={resp.cr_errno} pid={pid} msg={msg}")
    if resp.HasField("version"):
        v = resp.version
        say(f"VERSION major={v.major_number} minor={v.minor_number} sublevel={v.sublevel} "
            f"name={v.name} gitid={v.gitid}")
    if resp.HasField("features"):
        f = resp.features
        say(f"FEATURES mem_track={f.mem_track} lazy_pages={f.lazy_pages} "
            f"pidfd_store={f.pidfd_store}")


def main(argv):
    fail_at = die_at = raw = argv0 = None
    die_after = None
    keep_open = False
    while argv and argv[0].startswith("--"):
        o = argv.pop(0)
        if o == "--fail-at":
            fail_at = argv.pop(0)
        elif o == "--die-at":
            die_at = argv.pop(0)
        elif o == "--die-after":
            die_after = float(argv.pop(0))
        elif o == "--raw":
            raw = open(argv.pop(0), "rb").read()
        elif o == "--keep-open":
            keep_open = True
        elif o == "--argv0":
            argv0 = argv.pop(0)
    memdump, rtype = argv[0], argv[1]
    req = rpc.criu_req()
    req.type = rpc.criu_req_type.Value(rtype) if not rtype.isdigit() else int(rtype)
    if keep_open:
        req.keep_open = True
    if rtype == "FEATURE_CHECK":
        req.features.mem_track = True
        req.features.lazy_pages = True
    if rtype in ("DUMP", "RESTORE", "CHECK") or len(argv) > 2:
        req.opts.images_dir_fd = -1
        for kv in argv[2:]:
            set_opt(req.opts, kv)

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen([argv0 or memdump, "swrk", str(theirs.fileno())],
                            executable=memdump, pass_fds=[theirs.fileno()])
    theirs.close()
    ours.send(raw if raw is not None else req.SerializeToString())
    if die_after is not None:
        time.sleep(die_after)
        os._exit(99)
    ok = False
    while True:
        try:
            data = ours.recv(1 << 20)
        except ConnectionResetError:
            data = b""
        if not data:
            say("EOF")
            break
        resp = rpc.criu_resp()
        resp.ParseFromString(data)
        if resp.type == rpc.NOTIFY:
            say(f"NOTIFY {resp.notify.script} pid={resp.notify.pid}")
            if resp.notify.script == die_at:
                os._exit(99)
            ack = rpc.criu_req()
            ack.type = rpc.NOTIFY
            ack.notify_success = resp.notify.script != fail_at
            ours.send(ack.SerializeToString())
            continue
        show(resp)
        ok = resp.success
        if keep_open and resp.success and resp.type != rpc.VERSION:
            nxt = rpc.criu_req()
            nxt.type = rpc.VERSION
            ours.send(nxt.SerializeToString())
            continue
        break
    ours.close()
    say(f"EXIT {proc.wait()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
