# lib.sh — shared helpers for the Kafka test-bed scripts (sourced, not run).
#
# Run directory: every cluster, mirror and log of one test run lives under
#   $SG_RUN_DIR   (default: the run recorded in /tmp/syncgate-testbed/current,
#                  else a fresh `mktemp -d /tmp/syncgate-testbed/run.XXXXXX`,
#                  which is then recorded there).
# Every process we start gets a pid file under $SG_RUN_DIR/pids/ (one line:
# "<pid> <what>") and, for JVMs, the marker -Dsyncgate.testbed=$SG_RUN_DIR on
# its command line, so stop-all can find exactly what this run started.
#
# If SG_OWNER_PID is set (the pytest process), a watchdog runs stop-all for the
# run directory as soon as that process is gone — even after a SIGKILL.

SG_KAFKA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SG_REPO="$(cd "$SG_KAFKA_DIR/../.." && pwd)"
SG_JAVA="${SG_JAVA:-/usr/bin/java}"
SG_PY="${SG_PY:-/usr/bin/python3}"
SG_STATE_HOME="${SG_STATE_HOME:-/tmp/syncgate-testbed}"

sg_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
sg_die() { echo "error: $*" >&2; exit 1; }
# The calling script's header comment (up to `set -euo`) as its usage: to
# stderr and exit 2 (bad usage), or with `sg_usage 0` (asked for: --help) to
# stdout and exit 0.
sg_usage() {
  local rc="${1:-2}"
  if [ "$rc" -eq 0 ]; then sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  else sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; fi
  exit "$rc"
}
# Bootstrap servers of cluster $1 of this run.
sg_bootstrap_of() {
  local f="$SG_RUN_DIR/clusters/$1/cluster.env"
  [ -f "$f" ] || sg_die "no cluster '$1' in $SG_RUN_DIR"
  sed -n 's/^BOOTSTRAP=//p' "$f"
}

# sg_run_dir: resolve (and create) the run directory into SG_RUN_DIR.
sg_run_dir() {
  if [ -z "${SG_RUN_DIR:-}" ]; then
    mkdir -p "$SG_STATE_HOME"
    if [ -f "$SG_STATE_HOME/current" ] && [ -d "$(cat "$SG_STATE_HOME/current")" ]; then
      SG_RUN_DIR="$(cat "$SG_STATE_HOME/current")"
    else
      SG_RUN_DIR="$(mktemp -d "$SG_STATE_HOME/run.XXXXXX")"
      echo "$SG_RUN_DIR" > "$SG_STATE_HOME/current"
    fi
  fi
  mkdir -p "$SG_RUN_DIR/pids"
  SG_RUN_DIR="$(cd "$SG_RUN_DIR" && pwd)"
  export SG_RUN_DIR
}

# sg_kafka_libs: the jar folder (fetches it when missing).
sg_kafka_libs() {
  if [ -z "${SG_KAFKA_LIBS:-}" ]; then
    local v
    v="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SG_KAFKA_DIR/pom.xml")"
    SG_KAFKA_LIBS="$SG_REPO/.cache/kafka-$v/libs"
  fi
  [ -f "$SG_KAFKA_LIBS/.complete" ] || SG_KAFKA_LIBS="$(bash "$SG_KAFKA_DIR/fetch-jars.sh")"
  export SG_KAFKA_LIBS
}

# sg_free_ports N: print N distinct free loopback TCP ports (space separated).
# Ports come from 20000-32767, below Linux's ephemeral range (32768-60999), so
# a client's outgoing connection cannot grab one before Kafka binds it; an
# flock'd ledger of recently handed-out ports (10 min) keeps clusters started
# at the same time, from any run dir, apart.
sg_free_ports() {
  mkdir -p "$SG_STATE_HOME"
  "$SG_PY" - "$1" "$SG_STATE_HOME/ports.ledger" <<'PYEOF'
import fcntl, random, socket, sys, time
n, ledger = int(sys.argv[1]), sys.argv[2]
with open(ledger, "a+") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    f.seek(0)
    now = time.time()
    recent = {}
    for line in f:
        try:
            port, ts = line.split()
            if now - float(ts) < 600:
                recent[int(port)] = float(ts)
        except ValueError:
            pass
    got = []
    for _ in range(5000):
        if len(got) == n:
            break
        port = random.randrange(20000, 32768)
        if port in recent or port in got:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            got.append(port)
        except OSError:
            pass
        finally:
            s.close()
    if len(got) < n:
        sys.exit("sg_free_ports: no free ports")
    for p in got:
        recent[p] = now
    f.seek(0)
    f.truncate()
    f.writelines(f"{p} {ts}\n" for p, ts in recent.items())
print(" ".join(map(str, got)))
PYEOF
}

# sg_alive PIDFILE: true when the pid in PIDFILE runs and still is our process.
sg_alive() {
  local pf="$1" pid
  [ -f "$pf" ] || return 1
  pid="$(cut -d' ' -f1 "$pf")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # guard against pid reuse: our processes carry the run dir on their cmdline
  # or were started with it as cwd-independent marker in the environment
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$SG_RUN_DIR" \
    || grep -qz "^SG_RUN_DIR=$SG_RUN_DIR\$" "/proc/$pid/environ" 2>/dev/null
}

sg_pid() { cut -d' ' -f1 "$1" 2>/dev/null; }

# sg_running PID: the process exists and is not a zombie (an exited child
# waits a moment for PID 1 to reap it; it is dead for our purposes).
sg_running() {
  local st
  st="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# sg_spawn PIDFILE LOGFILE WHAT cmd...: start cmd in the background, detached
# from the terminal's hangups, and record its pid.
sg_spawn() {
  local pf="$1" lf="$2" what="$3"; shift 3
  mkdir -p "$(dirname "$pf")" "$(dirname "$lf")"
  SG_RUN_DIR="$SG_RUN_DIR" nohup "$@" >>"$lf" 2>&1 </dev/null &
  echo "$! $what" > "$pf"
  sg_watchdog
}

# sg_stop_pidfile PIDFILE [GRACE_SECONDS]: SIGTERM (SIGCONT first, in case it
# is paused), wait up to GRACE seconds, then SIGKILL. GRACE=0 kills at once.
sg_stop_pidfile() {
  local pf="$1" grace="${2:-10}" pid i
  if sg_alive "$pf"; then
    pid="$(sg_pid "$pf")"
    if [ "$grace" = 0 ]; then
      kill -KILL "$pid" 2>/dev/null || true
    else
      kill -CONT "$pid" 2>/dev/null || true
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < grace * 10; i++)); do
        sg_running "$pid" || break
        sleep 0.1
      done
      sg_running "$pid" && kill -KILL "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 50; i++)); do sg_running "$pid" || break; sleep 0.1; done
  fi
  rm -f "$pf"
}

# sg_watchdog: when SG_OWNER_PID is set, make sure one watchdog per run dir
# stops everything once the owner process exits.
sg_watchdog() {
  [ -n "${SG_OWNER_PID:-}" ] || return 0
  local wf="$SG_RUN_DIR/pids/watchdog.pid"
  sg_alive "$wf" && return 0
  SG_RUN_DIR="$SG_RUN_DIR" nohup bash -c '
    while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
    [ -d "$2" ] && SG_RUN_DIR="$2" bash "$3/cluster.sh" stop-all --fast >/dev/null 2>&1
  ' sg-watchdog "$SG_OWNER_PID" "$SG_RUN_DIR" "$SG_KAFKA_DIR" >/dev/null 2>&1 </dev/null &
  echo "$! watchdog" > "$wf"
}

# sg_wait_port HOST:PORT SECONDS PIDFILE: wait until a TCP port accepts, or the
# process behind PIDFILE died, or the time is up.
sg_wait_port() {
  local hp="$1" secs="$2" pf="$3" end=$((SECONDS + $2))
  while ((SECONDS < end)); do
    if (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null; then return 0; fi
    [ -n "$pf" ] && ! sg_alive "$pf" && return 2
    sleep 0.2
  done
  return 1
}

# sg_java_opts: JVM flags for small, lean test processes.
sg_java_opts() {
  echo "-Xms64m -Xmx${SG_HEAP:-384m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1" \
       "-XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true" \
       "-Dlog4j2.configurationFile=$SG_KAFKA_DIR/log4j2.properties" \
       "-Dlog4j.configuration=file:$SG_KAFKA_DIR/log4j.properties" \
       "-Dsyncgate.testbed=$SG_RUN_DIR"
}
