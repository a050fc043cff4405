"""The tests/clients line protocol (README.md) for the Python client programs:
argv BOOTSTRAP TOPIC KEY=VALUE...; stdin "send PARTITION VALUE" / "flush";
stdout "ACK PARTITION OFFSET VALUE", "ERR PARTITION VALUE DESCRIPTION",
"FLUSHED", "DONE"."""

import sys
import threading


def args():
    if len(sys.argv) < 3:
        sys.exit("usage: PROG BOOTSTRAP TOPIC [KEY=VALUE...]")
    return sys.argv[1], sys.argv[2], dict(kv.split("=", 1) for kv in sys.argv[3:])


class Out:
    """Outcome lines (thread-safe) and the count of records in flight."""

    def __init__(self):
        self.cv = threading.Condition()
        self.pending = 0

    def line(self, s):
        with self.cv:
            sys.stdout.write(s + "\n")
            sys.stdout.flush()

    def sent(self):
        with self.cv:
            self.pending += 1

    def _done(self, s):
        with self.cv:
            sys.stdout.write(s + "\n")
            sys.stdout.flush()
            self.pending -= 1
            self.cv.notify_all()

    def ack(self, partition, offset, value):
        self._done(f"ACK {partition} {offset} {value}")

    def err(self, partition, value, desc):
        self._done(f"ERR {partition} {value} {' '.join(str(desc).split())}")

    def wait(self):
        with self.cv:
            self.cv.wait_for(lambda: self.pending == 0)

    def run(self, send):
        """Read stdin until EOF; send(partition, value) for each send line."""
        for raw in sys.stdin:
            f = raw.split()
            if len(f) == 3 and f[0] == "send":
                self.sent()
                send(int(f[1]), f[2])
            elif f == ["flush"]:
                self.wait()
                self.line("FLUSHED")
            elif f:
                sys.exit(f"bad line {raw!r}")
        self.wait()
