"""confluent-kafka (librdkafka) transactional producer driven by commands, the
protocol of the Java TxnProducer in tests/integration/test_txn_commit.py.

    confluenttxn.py BOOTSTRAP TRANSACTIONAL_ID TOPIC [KEY=VALUE...]

Options: commit_timeout_ms (the timeout given to init/commit/abort_transaction,
default 60000), request_timeout_ms (default 30000).
stdin: "init", "begin", "send N [P]" (N records to partition P, default 0,
each acknowledged before the answer), "commit [MS]", "abort [MS]" (MS: this
call's timeout instead of commit_timeout_ms), "quit". stdout:
"INIT", "BEGUN", "SENT first,last ms=..", "COMMITTED ms=..", "ABORTED ms=..",
or "ERROR <error> ms=.." (librdkafka's error name and code, and whether it
calls the error retriable, abortable or fatal)."""

import sys
import time

from confluent_kafka import KafkaException, Producer


def describe(e):
    err = e.args[0] if e.args else None
    if err is None or not hasattr(err, "code"):
        return " ".join(str(e).split())
    return (f"code={err.code()} name={err.name()} retriable={err.retriable()} "
            f"abortable={err.txn_requires_abort()} fatal={err.fatal()} {' '.join(err.str().split())}")


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: confluenttxn.py BOOTSTRAP TRANSACTIONAL_ID TOPIC [KEY=VALUE...]")
    bootstrap, txn_id, topic = sys.argv[1:4]
    o = dict(kv.split("=", 1) for kv in sys.argv[4:])
    timeout = int(o.get("commit_timeout_ms", 60000)) / 1000
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "acks": "all",
                  "linger.ms": 0, "request.timeout.ms": int(o.get("request_timeout_ms", 30000))})
    k = 0
    for raw in sys.stdin:
        f = raw.split()
        if not f:
            continue
        if f[0] == "quit":
            break
        t0 = time.monotonic()
        ms = lambda: int((time.monotonic() - t0) * 1000)  # noqa: E731
        try:
            if f[0] == "init":
                p.init_transactions(timeout)
                answer = "INIT"
            elif f[0] == "begin":
                p.begin_transaction()
                answer = "BEGUN"
            elif f[0] == "send":
                n, part = int(f[1]), int(f[2]) if len(f) > 2 else 0
                offsets, errors = [], []
                for _ in range(n):
                    p.produce(topic, key=f"k{k}".encode(), value=f"v{k}".encode(), partition=part,
                              on_delivery=lambda err, m: errors.append(err) if err else offsets.append(m.offset()))
                    k += 1
                p.flush(timeout)
                if errors or len(offsets) < n:
                    raise KafkaException(errors[0] if errors else "send not acknowledged in time")
                answer = f"SENT {min(offsets)},{max(offsets)} ms={ms()}"
            elif f[0] == "commit":
                p.commit_transaction(int(f[1]) / 1000 if len(f) > 1 else timeout)
                answer = f"COMMITTED ms={ms()}"
            elif f[0] == "abort":
                p.abort_transaction(int(f[1]) / 1000 if len(f) > 1 else timeout)
                answer = f"ABORTED ms={ms()}"
            else:
                sys.exit(f"bad line {raw!r}")
        except KafkaException as e:
            answer = f"ERROR {describe(e)} ms={ms()}"
        print(answer, flush=True)


main()
