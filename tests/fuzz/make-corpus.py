#!/usr/bin/python3
"""Seed corpus for the codec fuzz targets from tests/codec/golden/**/*.hex.

Input layout (tests/fuzz/fuzz.h): byte 0 selects the version (vmin + b0 %
range), byte 1 the segment cut, then the body (frame minus size prefix and
header). Writes tests/fuzz/corpus/<target>/<golden name>.
"""
import os
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parent
GOLDEN = ROOT.parent / "codec" / "golden"

# target -> (golden prefix, is_request, api_key, vmin, [(rewrite api index)])
TARGETS = {
    "produce_request": ("produce_req", True, 0, 3),
    "produce_response": ("produce_resp", False, 0, 3),
    "fetch_response": ("fetch_resp", False, 1, 4),
    "metadata_response": ("metadata_resp", False, 3, 0),
    "find_coordinator_response": ("find_coordinator_resp", False, 10, 0),
    "describe_cluster_response": ("describe_cluster_resp", False, 60, 0),
    "api_versions_request": ("api_versions_req", True, 18, 0),
    "api_versions_response": ("api_versions_resp", False, 18, 0),
    "list_offsets_request": ("list_offsets_req", True, 2, 1),
    "list_offsets_response": ("list_offsets_resp", False, 2, 1),
    "init_producer_id_response": ("init_producer_id_resp", False, 22, 0),
    "end_txn_response": ("end_txn_resp", False, 26, 0),
}
# fuzz_rewrite_endpoints: api index in its table, vmin
REWRITE = {"metadata_resp": (0, 0), "find_coordinator_resp": (1, 0), "describe_cluster_resp": (2, 0),
           "produce_resp": (3, 10), "fetch_resp": (4, 16), "share_fetch_resp": (5, 1),
           "share_acknowledge_resp": (6, 1)}
FLEX = {0: 9, 1: 12, 2: 6, 3: 9, 10: 3, 18: 3, 22: 2, 26: 3, 60: 0, 78: 0, 79: 0}


def uvarint_len(b, off):
    n = 0
    while b[off + n] & 0x80:
        n += 1
    return n + 1


def body_of(frame, request, api, version):
    off = 4
    if request:
        off += 8
        (cid,) = struct.unpack(">h", frame[off:off + 2])
        off += 2 + max(cid, 0)
        if version >= FLEX[api]:
            off += uvarint_len(frame, off)  # empty tag section: 1 byte
    else:
        off += 4
        if api != 18 and version >= FLEX[api]:
            off += uvarint_len(frame, off)
    return frame[off:]


def main():
    for f in sorted(GOLDEN.rglob("*.hex")):
        name = str(f.relative_to(GOLDEN).with_suffix("")).replace("/", "_")
        prefix, _, v = f.stem.rpartition("_v")
        v = int(v)
        frame = bytes.fromhex("".join(f.read_text().split()))
        for target, (gp, request, api, vmin) in TARGETS.items():
            if prefix == gp or (prefix == "api_versions_err_resp" and gp == "api_versions_resp"):
                out = ROOT / "corpus" / target
                out.mkdir(parents=True, exist_ok=True)
                body = body_of(frame, request, api, v)
                (out / name).write_bytes(bytes([v - vmin, 85]) + body)
        out = ROOT / "corpus" / "headers"
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(bytes([0, 128]) + frame[4:64])
        if prefix in REWRITE:
            idx, vmin = REWRITE[prefix]
            if v < vmin:
                continue
            api = {0: 3, 1: 10, 2: 60, 3: 0, 4: 1, 5: 78, 6: 79}[idx]
            out = ROOT / "corpus" / "rewrite_endpoints"
            out.mkdir(parents=True, exist_ok=True)
            # byte 0: api index (b0 % 7) and version (vmin + b0 // 7)
            b0 = idx + 7 * (v - vmin)
            (out / name).write_bytes(bytes([b0, 85]) + body_of(frame, False, api, v))


if __name__ == "__main__":
    main()
