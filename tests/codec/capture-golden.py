#!/usr/bin/python3
"""Capture real Kafka frames as golden files: a tiny TCP relay between clients
and ONE broker that dumps the first frame of each (api, direction, version)
as hex, the way tests/codec/golden/*.hex are stored:

    <out>/<api>_<req|resp>_v<N>.hex    (size prefix + header + body)

Metadata responses are forwarded with every broker address replaced by the
relay's own, so clients keep talking through it (single-broker clusters:
all node ids map to the relay); the dumped frame is the broker's original.

    tests/codec/capture-golden.py --listen 127.0.0.1:29092 \
        --broker 127.0.0.1:9092 --out tests/codec/golden/kcat
    kcat -b 127.0.0.1:29092 -P -t t1 <<<'hello'      # in another shell

Stops on SIGINT/SIGTERM (or after --seconds).
"""
import argparse
import os
import signal
import socket
import struct
import sys
import threading

NAMES = {0: "produce", 1: "fetch", 2: "list_offsets", 3: "metadata", 8: "offset_commit",
         9: "offset_fetch", 10: "find_coordinator", 11: "join_group", 12: "heartbeat",
         14: "sync_group", 17: "sasl_handshake", 18: "api_versions", 19: "create_topics",
         22: "init_producer_id", 32: "describe_configs", 36: "sasl_authenticate",
         60: "describe_cluster", 78: "share_fetch", 79: "share_acknowledge"}
# First flexible version of requests/responses of the keys we rewrite or name.
FLEX = {0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 14: 4, 18: 3, 19: 5,
        22: 2, 32: 4, 36: 2, 60: 0, 78: 0, 79: 0}


def uvarint(b, off):
    v = shift = 0
    while True:
        c = b[off]
        off += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, off


def put_uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def skip_tags(b, off):
    n, off = uvarint(b, off)
    for _ in range(n):
        _, off = uvarint(b, off)
        size, off = uvarint(b, off)
        off += size
    return off


def read_str(b, off, flex):
    if flex:
        n, off = uvarint(b, off)
        n -= 1
    else:
        (n,) = struct.unpack_from(">h", b, off)
        off += 2
    return (None if n < 0 else b[off:off + n]), off + max(n, 0)


def put_str(s, flex):
    return (put_uvarint(len(s) + 1) if flex else struct.pack(">h", len(s))) + s


def rewrite_metadata(body, version, host, port):
    """body = response frame after the size prefix. Returns the new body."""
    flex = version >= 9
    off = 4
    if flex:
        off = skip_tags(body, off)
    if version >= 3:
        off += 4
    if flex:
        n, off = uvarint(body, off)
        n -= 1
    else:
        (n,) = struct.unpack_from(">i", body, off)
        off += 4
    out = bytearray(body[:off])
    for _ in range(n):
        node_id = body[off:off + 4]
        _, off2 = read_str(body, off + 4, flex)
        off = off2 + 4
        out += node_id + put_str(host.encode(), flex) + struct.pack(">i", port)
        rest = off
        if version >= 1:
            _, off = read_str(body, off, flex)
        if flex:
            off = skip_tags(body, off)
        out += body[rest:off]
    return bytes(out) + body[off:]


class Relay:
    def __init__(self, args):
        self.args = args
        self.lhost, lport = args.listen.rsplit(":", 1)
        self.lport = int(lport)
        bhost, bport = args.broker.rsplit(":", 1)
        self.broker = (bhost, int(bport))
        self.lock = threading.Lock()
        os.makedirs(args.out, exist_ok=True)

    def dump(self, key, version, kind, frame):
        name = "%s_%s_v%d.hex" % (NAMES.get(key, "api%d" % key), kind, version)
        path = os.path.join(self.args.out, name)
        with self.lock:
            if os.path.exists(path) and not self.args.overwrite:
                return
            hexs = frame.hex()
            with open(path, "w") as f:
                for i in range(0, len(hexs), 64):
                    f.write(hexs[i:i + 64] + "\n")
            print("captured", name, len(frame), "bytes", flush=True)

    @staticmethod
    def frames(sock):
        buf = b""
        while True:
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buf += chunk
            n = 4 + struct.unpack(">i", buf[:4])[0]
            yield buf[:n]
            buf = buf[n:]

    def client_to_broker(self, client, broker, inflight):
        try:
            for frame in self.frames(client):
                key, version, corr = struct.unpack_from(">hhi", frame, 4)
                inflight[corr] = (key, version)
                self.dump(key, version, "req", frame)
                broker.sendall(frame)
        except OSError:
            pass
        finally:
            broker.close()

    def broker_to_client(self, client, broker, inflight):
        try:
            for frame in self.frames(broker):
                (corr,) = struct.unpack_from(">i", frame, 4)
                key, version = inflight.pop(corr, (-1, -1))
                if key >= 0:
                    self.dump(key, version, "resp", frame)
                if key == 3:
                    body = rewrite_metadata(frame[4:], version, self.lhost, self.lport)
                    frame = struct.pack(">i", len(body)) + body
                client.sendall(frame)
        except OSError:
            pass
        finally:
            client.close()

    def serve(self):
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.lhost, self.lport))
        srv.listen(16)
        print("relay %s -> %s:%d, frames to %s" % (self.args.listen, *self.broker, self.args.out),
              flush=True)
        while True:
            client, _ = srv.accept()
            broker = socket.create_connection(self.broker)
            inflight = {}
            for fn in (self.client_to_broker, self.broker_to_client):
                threading.Thread(target=fn, args=(client, broker, inflight), daemon=True).start()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", required=True, help="HOST:PORT the relay listens on")
    p.add_argument("--broker", required=True, help="HOST:PORT of the one broker")
    p.add_argument("--out", required=True, help="directory for <api>_<req|resp>_v<N>.hex")
    p.add_argument("--overwrite", action="store_true", help="replace existing files")
    p.add_argument("--seconds", type=float, default=0, help="exit after this long (0: never)")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.seconds:
        threading.Timer(args.seconds, lambda: os._exit(0)).start()
    try:
        Relay(args).serve()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
