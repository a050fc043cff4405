#!/usr/bin/env python3
"""Who calls whom between the files of a static library, and any call cycle.

Reads the library's symbol table (nm): file A calls file B when A's object
has an undefined symbol that B's object defines. Prints one line per file
("a.c -> b.c c.c"), then every cycle (a strongly connected component of more
than one file); exits 1 if there is one. Static inline functions and calls
through function pointers are not edges (the callbacks the gate registers).
`--core a.c,b.c` names files allowed to form a cycle among themselves (one
unit split by concern: proxy/'s streaming pump, its clamp and its splice
runs); a cycle that reaches any other file still fails.

    python3 tests/mirror/layers.py build/mirror/libsgmirror.a
    python3 tests/mirror/layers.py build/proxy/libsgproxy.a
    python3 tests/mirror/layers.py build/proxy/admin/libsgadmin.a

What one library may call of another (libsgadmin of libsgproxy): uses.py.
"""
import subprocess, sys, collections


def symbols(lib):
    """The library's symbols: ({symbol: file defining it}, {file: symbols it needs})."""
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True, check=True).stdout
    defs, uses = {}, collections.defaultdict(set)
    for line in out.splitlines():
        head, _, rest = line.rpartition(".o:")
        parts = rest.split()
        if len(parts) < 2:
            continue
        obj = head.rsplit("/", 1)[-1]
        typ, sym = parts[-2], parts[-1]
        if typ in "TDBR":
            defs[sym] = obj
        elif typ == "U":
            uses[obj].add(sym)
    return defs, uses


def main():
    args = sys.argv[1:]
    core = set()
    if args[:1] == ["--core"]:
        core = set(args[1].split(","))
        args = args[2:]
    defs, uses = symbols(args[0])
    edges = collections.defaultdict(set)
    for obj, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != obj:
                edges[obj].add(defs[s])
    for o in sorted(set(defs.values()) | set(uses)):
        print(f"{o:16} -> {' '.join(sorted(edges[o]))}")
    # Tarjan SCC
    idx, low, st, on, sccs, i = {}, {}, [], set(), [], [0]
    def sc(v):
        idx[v] = low[v] = i[0]; i[0] += 1; st.append(v); on.add(v)
        for w in edges[v]:
            if w not in idx: sc(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            c = []
            while True:
                w = st.pop(); on.discard(w); c.append(w)
                if w == v: break
            if len(c) > 1: sccs.append(c)
    for v in list(edges) + list(defs.values()):
        if v not in idx: sc(v)
    bad = [c for c in sccs if not set(c) <= core]
    for c in sccs:
        print("CORE:" if c not in bad else "CYCLE:", " ".join(sorted(c)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
