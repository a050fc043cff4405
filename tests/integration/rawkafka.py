"""rawkafka — a tiny hand-rolled Kafka protocol client for syncgate's tests.

Real clients hide what syncgate must get exactly right (correlation order,
version negotiation, error codes per partition), so these tests speak the
wire protocol themselves: pipelined requests, any Produce version 3–14,
ApiVersions with any version (S6), raw frames (S9).

Record batches come from kafka-python's DefaultRecordBatchBuilder (Debian's
python3-kafka, so run with /usr/bin/python3).
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Optional

from kafka.record.default_records import DefaultRecordBatchBuilder


def record_batch(values: list[bytes], key: Optional[bytes] = None,
                 producer: tuple[int, int, int] = (-1, -1, -1)) -> bytes:
    """A RecordBatch v2 (no compression) holding `values`; `producer`:
    (producer id, epoch, base sequence) of an idempotent batch."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=producer[0], producer_epoch=producer[1],
                                  base_sequence=producer[2], batch_size=1 << 30)
    now = int(time.time() * 1000)
    for v in values:
        b.append(0, now, key, v, [])
    return bytes(b.build())


# -- encoding -----------------------------------------------------------------

def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def string(s: Optional[str], flexible: bool) -> bytes:
    if s is None:
        return uvarint(0) if flexible else i16(-1)
    b = s.encode()
    return (uvarint(len(b) + 1) if flexible else i16(len(b))) + b


def bytes_(b: Optional[bytes], flexible: bool) -> bytes:
    if b is None:
        return uvarint(0) if flexible else i32(-1)
    return (uvarint(len(b) + 1) if flexible else i32(len(b))) + b


def array(items: list[bytes], flexible: bool) -> bytes:
    return (uvarint(len(items) + 1) if flexible else i32(len(items))) + b"".join(items)


TAGS0 = b"\x00"  # an empty tagged-field section

# first flexible version per API key we speak
FLEX_FROM = {0: 9, 3: 9, 10: 3, 18: 3, 60: 0}


def request_header(api_key: int, version: int, corr: int, client_id: str = "rawkafka") -> bytes:
    flexible = version >= FLEX_FROM.get(api_key, 99)
    h = i16(api_key) + i16(version) + i32(corr) + string(client_id, False)
    return h + (TAGS0 if flexible else b"")


def produce_body(version: int, acks: int, timeout_ms: int,
                 topics: dict, topic_ids: Optional[dict] = None) -> bytes:
    """topics: {name: {partition: batch_bytes}}. v13+: topic_ids {name: 16 bytes}."""
    flex = version >= 9
    tlist = []
    for name, parts in topics.items():
        plist = [i32(p) + bytes_(batch, flex) + (TAGS0 if flex else b"")
                 for p, batch in parts.items()]
        tname = topic_ids[name] if version >= 13 else string(name, flex)
        tlist.append(tname + array(plist, flex) + (TAGS0 if flex else b""))
    body = string(None, flex) + i16(acks) + i32(timeout_ms) + array(tlist, flex)
    return body + (TAGS0 if flex else b"")


# -- decoding -----------------------------------------------------------------

class Reader:
    def __init__(self, b: bytes, flexible: bool = False):
        self.b, self.o, self.flex = b, 0, flexible

    def take(self, n):
        v = self.b[self.o:self.o + n]
        if len(v) != n:
            raise ValueError("truncated")
        self.o += n
        return v

    def i8(self): return struct.unpack(">b", self.take(1))[0]
    def i16(self): return struct.unpack(">h", self.take(2))[0]
    def i32(self): return struct.unpack(">i", self.take(4))[0]
    def i64(self): return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        n = shift = 0
        while True:
            c = self.take(1)[0]
            n |= (c & 0x7F) << shift
            if c < 0x80:
                return n
            shift += 7

    def string(self):
        n = self.uvarint() - 1 if self.flex else self.i16()
        return None if n < 0 else self.take(n).decode()

    def array_len(self):
        return self.uvarint() - 1 if self.flex else self.i32()

    def tags(self):
        out = {}
        if self.flex:
            for _ in range(self.uvarint()):
                t = self.uvarint()
                out[t] = self.take(self.uvarint())
        return out


@dataclass
class PartitionResult:
    index: int
    error_code: int
    base_offset: int
    error_message: Optional[str] = None


@dataclass
class ProduceResult:
    topics: dict = field(default_factory=dict)  # name or topic id hex -> [PartitionResult]
    node_endpoints: list = field(default_factory=list)  # [(node_id, host, port)]


def parse_produce_response(body: bytes, version: int) -> ProduceResult:
    r = Reader(body, version >= 9)
    out = ProduceResult()
    for _ in range(r.array_len()):
        name = r.take(16).hex() if version >= 13 else r.string()
        parts = []
        for _ in range(r.array_len()):
            idx, err, base = r.i32(), r.i16(), r.i64()
            if version >= 2:
                r.i64()  # LogAppendTimeMs
            if version >= 5:
                r.i64()  # LogStartOffset
            msg = None
            if version >= 8:
                for _ in range(r.array_len()):  # RecordErrors
                    r.i32()
                    r.string()
                    r.tags()
                msg = r.string()
            r.tags()
            parts.append(PartitionResult(idx, err, base, msg))
        r.tags()
        out.topics[name] = parts
    r.i32()  # ThrottleTimeMs
    tags = r.tags()
    if 0 in tags:  # NodeEndpoints
        t = Reader(tags[0], True)
        for _ in range(t.array_len()):
            nid = t.i32()
            host = t.string()
            port = t.i32()
            t.string()  # Rack
            t.tags()
            out.node_endpoints.append((nid, host, port))
    return out


def parse_api_versions(body: bytes, version: int) -> tuple[int, dict]:
    """Returns (ErrorCode, {api_key: (min, max)}). An UNSUPPORTED_VERSION reply
    is parsed in the v0 layout, as the broker sends it."""
    err = struct.unpack(">h", body[:2])[0]
    flex = version >= 3 and err != 35
    r = Reader(body[2:], flex)
    apis = {}
    for _ in range(r.array_len()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.tags()
        apis[k] = (lo, hi)
    return err, apis


def parse_metadata_v12(body: bytes) -> tuple[list, dict]:
    """Returns ([(node_id, host, port)], {topic: (topic_id bytes, [partition ids])})."""
    r = Reader(body, True)
    r.i32()  # ThrottleTimeMs
    brokers = []
    for _ in range(r.array_len()):
        nid, host, port = r.i32(), r.string(), r.i32()
        r.string()  # Rack
        r.tags()
        brokers.append((nid, host, port))
    r.string()  # ClusterId
    r.i32()  # ControllerId
    topics = {}
    for _ in range(r.array_len()):
        r.i16()
        name = r.string()
        tid = r.take(16)
        r.i8()  # IsInternal
        parts = []
        for _ in range(r.array_len()):
            r.i16()
            parts.append(r.i32())
            r.i32()  # LeaderId
            r.i32()  # LeaderEpoch
            for _ in range(3):  # Replicas, Isr, Offline
                for _ in range(r.array_len()):
                    r.i32()
            r.tags()
        r.i32()  # TopicAuthorizedOperations
        r.tags()
        topics[name] = (tid, parts)
    return brokers, topics


# -- the client -----------------------------------------------------------------

class RawClient:
    """One TCP connection speaking raw Kafka frames; requests may be pipelined."""

    def __init__(self, host: str, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.corr = 0
        self.sent: list[tuple[int, int, int]] = []  # (corr, api_key, version)

    def close(self):
        self.sock.close()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send(self, api_key: int, version: int, body: bytes, corr: Optional[int] = None,
             expect_response: bool = True) -> int:
        self.corr += 1
        c = self.corr if corr is None else corr
        frame = request_header(api_key, version, c) + body
        self.sock.sendall(i32(len(frame)) + frame)
        if expect_response:
            self.sent.append((c, api_key, version))
        return c

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed")
            buf += chunk
        return bytes(buf)

    def recv(self) -> tuple[int, bytes]:
        """Next response: (correlation id, body after the response header)."""
        size = struct.unpack(">i", self._read_exact(4))[0]
        frame = self._read_exact(size)
        corr = struct.unpack(">i", frame[:4])[0]
        _, api_key, version = self.sent.pop(0) if self.sent else (None, None, None)
        flexible_header = api_key != 18 and version is not None and \
            version >= FLEX_FROM.get(api_key, 99)
        body = frame[4:]
        if flexible_header:
            r = Reader(body, True)
            r.tags()
            body = body[r.o:]
        return corr, body

    # conveniences
    def api_versions(self, version: int = 3, software: tuple[str, str] = ("rawkafka", "1.0"),
                     cluster_id: Optional[str] = None, node_id: int = -1) -> tuple[int, dict]:
        """ApiVersions at `version`: v3+ names the client software, v5+
        (KIP-1242; any later version in that layout) the cluster and node."""
        body = b""
        if version >= 3:
            body = string(software[0], True) + string(software[1], True)
            if version >= 5:
                body += string(cluster_id, True) + i32(node_id)
            body += TAGS0
        self.send(18, version, body)
        _, resp = self.recv()
        return parse_api_versions(resp, version)

    def metadata(self, topics: Optional[list[str]] = None) -> tuple[list, dict]:
        if topics is None:
            tl = uvarint(0)  # null: all topics
        else:
            tl = array([b"\x00" * 16 + string(t, True) + TAGS0 for t in topics], True)
        self.send(3, 12, tl + i8(0) + i8(0) + TAGS0)
        _, resp = self.recv()
        return parse_metadata_v12(resp)

    def describe_cluster(self) -> list:
        """DescribeCluster v0: [(node_id, host, port)]."""
        self.send(60, 0, i8(0) + TAGS0)
        _, resp = self.recv()
        r = Reader(resp, True)
        r.i32()  # ThrottleTimeMs
        assert r.i16() == 0
        r.string()  # ErrorMessage
        r.string()  # ClusterId
        r.i32()  # ControllerId
        out = []
        for _ in range(r.array_len()):
            nid, host, port = r.i32(), r.string(), r.i32()
            r.string()
            r.tags()
            out.append((nid, host, port))
        return out

    def find_coordinators(self, key_type: int, keys: list[str]) -> list:
        """FindCoordinator v4 (batched): [(key, node_id, host, port, error)]."""
        self.send(10, 4, i8(key_type) + array([string(k, True) for k in keys], True) + TAGS0)
        _, resp = self.recv()
        r = Reader(resp, True)
        r.i32()
        out = []
        for _ in range(r.array_len()):
            key, nid, host, port, err = r.string(), r.i32(), r.string(), r.i32(), r.i16()
            r.string()
            r.tags()
            out.append((key, nid, host, port, err))
        return out

    def produce(self, topic: str, partition: int, values: list[bytes], version: int = 9,
                acks: int = -1, timeout_ms: int = 30000,
                topic_id: Optional[bytes] = None,
                producer: tuple[int, int, int] = (-1, -1, -1)) -> ProduceResult:
        body = produce_body(version, acks, timeout_ms,
                            {topic: {partition: record_batch(values, producer=producer)}},
                            {topic: topic_id} if topic_id else None)
        self.send(0, version, body, expect_response=acks != 0)
        if acks == 0:
            return ProduceResult()
        _, resp = self.recv()
        return parse_produce_response(resp, version)
