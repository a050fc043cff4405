#!/usr/bin/env python3
"""What one static library may call of the library below it.

    python3 tests/mirror/uses.py UPPER.a LOWER.a --public HEADER... [--sources FILE...]
    python3 tests/mirror/uses.py build/proxy/admin/libsgadmin.a build/proxy/libsgproxy.a \
        --public proxy/proxy.h proxy/tls.h proxy/security.h \
        --sources proxy/admin/*.[ch] proxy/cmd/*.[ch]

Reads both symbol tables (nm, as layers.py does). Prints every call from a
file of UPPER to a file of LOWER ("admin.c -> listener.c proxy_listeners_set_upstream"),
then fails (exit 1) when
  * a file of LOWER calls anything UPPER defines (the lower library calls up), or
  * a file of UPPER calls a LOWER symbol that none of the public HEADERs
    declares (a name outside the headers' comments): the upper library reaches
    past the lower one's public face into its private declarations.
  * one of the --sources (the upper library's files, and programs that should
    see only the public face) includes a header of the public headers'
    folder ("proxy/datapath.h") that is not a public one: the symbol table
    cannot show a read of a private struct's field, the include can.
Calls through function pointers are not seen (the callback the upper library
registers is fine). Cycles inside one library are layers.py's.
"""
import argparse, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import symbols  # noqa: E402


def declared(headers):
    """Every identifier of the headers, comments left out."""
    names = set()
    for h in headers:
        with open(h, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        names.update(re.findall(r"[A-Za-z_]\w*", text))
    return names


def private_includes(sources, headers):
    """(source, include) for each include of a non-public header of the headers' folder."""
    names = {"/".join(os.path.normpath(h).split(os.sep)[-2:]) for h in headers}
    folders = {n.rsplit("/", 1)[0] for n in names}
    found = []
    for src in sources:
        with open(src, encoding="utf-8") as f:
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), flags=re.M):
                if inc.rsplit("/", 1)[0] in folders and inc not in names:
                    found.append((src, inc))
    return found


def main():
    ap = argparse.ArgumentParser(description="what UPPER.a may call of LOWER.a")
    ap.add_argument("upper")
    ap.add_argument("lower")
    ap.add_argument("--public", nargs="+", required=True, help="LOWER's public headers")
    ap.add_argument("--sources", nargs="*", default=[], help="files that may include only those")
    a = ap.parse_args()
    upper, lower, headers = a.upper, a.lower, a.public
    up_defs, up_uses = symbols(upper)
    lo_defs, lo_uses = symbols(lower)
    public = declared(headers)
    bad = 0
    for src, inc in private_includes(a.sources, headers):
        print(f"PRIVATE INCLUDE: {src} includes \"{inc}\"")
        bad += 1
    for obj in sorted(up_uses):
        for sym in sorted(s for s in up_uses[obj] if s in lo_defs and s not in up_defs):
            ok = sym in public
            print(f"{obj:16} -> {lo_defs[sym]:16} {sym}" + ("" if ok else "   NOT PUBLIC"))
            bad += not ok
    for obj in sorted(lo_uses):
        for sym in sorted(s for s in lo_uses[obj] if s in up_defs and s not in lo_defs):
            print(f"CALLS UP: {obj} -> {up_defs[sym]} {sym}")
            bad += 1
    if bad:
        print(f"{bad} call(s) break the layering of {os.path.basename(upper)} above "
              f"{os.path.basename(lower)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
