#!/usr/bin/env bash
# cluster.sh — real Apache Kafka (KRaft) clusters for tests and the sandbox.
#
#   cluster.sh start NAME [--brokers N] [--first-id K] [--dir RUN_DIR] [--prop k=v]... [--node-prop ID:k=v]... [--timeout S]
#       One node (combined broker+controller, node id 1) by default. With
#       --brokers N>1: a separate controller (node id 100) plus broker-only
#       nodes 1..N, so brokers can be stopped while the controller keeps
#       shrinking ISR (min.insync.replicas tests). --first-id K numbers the
#       brokers K..K+N-1 instead (K < 100 or above K+N: another cluster's ids,
#       e.g. a destination whose node ids the source has not). Ports are free 127.0.0.1
#       ports. Waits until every broker answers and metadata shows N brokers.
#       --prop overrides/extends every node's server.properties;
#       --node-prop ID:k=v (repeatable) only node ID's, after them (e.g.
#       per-broker broker.rack).
#       --listener NAME:PROTOCOL (repeatable) adds a listener NAME (e.g.
#       SSL:SSL, SASL:SASL_PLAINTEXT) on its own free port to every broker,
#       advertised too; configure it with --prop listener.name.<name>.* and
#       find it in `env` as SG_<C>_BROKER_<ID>_<NAME>.
#   cluster.sh stop NAME [--fast]          stop all nodes (--fast: SIGKILL)
#   cluster.sh env NAME                    print shell variables (see below)
#   cluster.sh stop-broker NAME ID [--kill]   SIGTERM (controlled shutdown) or SIGKILL one broker
#   cluster.sh start-broker NAME ID        restart it (same ports, same data); waits until registered
#   cluster.sh pause-broker NAME ID / resume-broker NAME ID    SIGSTOP / SIGCONT one broker
#   cluster.sh create-topic NAME TOPIC [--partitions P] [--rf R] [--config k=v]...
#   cluster.sh run NAME CLASS [ARGS...]    run a Kafka tool class, e.g.
#                                          run src org.apache.kafka.tools.TopicCommand --list
#                                          (--bootstrap-server is added for you)
#   cluster.sh status                      list clusters and processes of the run
#   cluster.sh stop-all [--fast] [--clean] stop every process the run dir started
#                                          (clusters, mirrors, syncgate); --clean removes it
#
# `env NAME` prints (NAME upper-cased, non-alphanumerics -> _), e.g. for "src":
#   SG_RUN_DIR=...  SG_SRC_BOOTSTRAP=127.0.0.1:p1,...  SG_SRC_BROKERS="1 2 3"
#   SG_SRC_BROKER_1=127.0.0.1:p1  SG_SRC_BROKER_1_PID=1234  SG_SRC_CONTROLLER=127.0.0.1:c
#   SG_SRC_CONTROLLER_PID=...  SG_SRC_DIR=<cluster dir>  (use: eval "$(cluster.sh env src)")
#
# Files: $SG_RUN_DIR/clusters/NAME/{cluster.env,node-ID/{server.properties,data,kafka.log}}
# Env: SG_RUN_DIR (see lib.sh), SG_HEAP (default 384m), SG_KAFKA_LIBS, SG_JAVA.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONTROLLER_ID=100


var_prefix() { echo "SG_$(echo "$1" | tr '[:lower:]' '[:upper:]' | tr -c 'A-Z0-9\n' '_')"; }

cluster_dir() { echo "$SG_RUN_DIR/clusters/$1"; }
node_pidfile() { echo "$SG_RUN_DIR/pids/cluster.$1.node-$2.pid"; }

load_cluster() {
  local name="$1" cd
  cd="$(cluster_dir "$name")"
  [ -f "$cd/cluster.env" ] || sg_die "no cluster '$name' in $SG_RUN_DIR"
  # shellcheck disable=SC1091
  . "$cd/cluster.env"     # BROKER_IDS, CONTROLLER_NODE, NODE_<id>_PORT, CONTROLLER_PORT, BOOTSTRAP
}

# broker_count BOOTSTRAP: number of brokers the cluster's metadata lists (or 0).
broker_count() {
  local n
  if command -v kcat >/dev/null; then
    n="$(kcat -L -b "$1" -m 3 2>/dev/null | sed -n 's/^ *\([0-9][0-9]*\) brokers:.*/\1/p' | head -1)"
  else
    n="$("$SG_PY" -c 'import sys
from confluent_kafka.admin import AdminClient
print(len(AdminClient({"bootstrap.servers": sys.argv[1]}).list_topics(timeout=3).brokers))' "$1" 2>/dev/null)"
  fi
  echo "${n:-0}"
}

# launch_node NAME ID: start the JVM of one node (already formatted).
launch_node() {
  local name="$1" id="$2" nd
  nd="$(cluster_dir "$name")/node-$id"
  # shellcheck disable=SC2046
  sg_spawn "$(node_pidfile "$name" "$id")" "$nd/kafka.log" "kafka $name node $id" \
    "$SG_JAVA" $(sg_java_opts) -Dsyncgate.node="$name/$id" -cp "$SG_KAFKA_LIBS/*" \
    kafka.Kafka "$nd/server.properties"
}

# wait_node NAME ID HOST:PORT: wait for the node's listener.
wait_node() {
  local rc=0
  sg_wait_port "$3" "${TIMEOUT:-90}" "$(node_pidfile "$1" "$2")" || rc=$?
  if [ $rc -ne 0 ]; then
    tail -30 "$(cluster_dir "$1")/node-$2/kafka.log" >&2 || true
    [ $rc -eq 2 ] && sg_die "cluster $1: node $2 died while starting (log above)"
    sg_die "cluster $1: node $2 not listening on $3 after ${TIMEOUT:-90}s"
  fi
}

# wait_brokers NAME WANT: wait until metadata shows WANT brokers.
wait_brokers() {
  local name="$1" want="$2" end=$((SECONDS + ${TIMEOUT:-90})) n=0
  while ((SECONDS < end)); do
    n="$(broker_count "$BOOTSTRAP")"
    [ "$n" -ge "$want" ] && return 0
    sleep 0.3
  done
  sg_die "cluster $name: metadata shows $n of $want brokers after ${TIMEOUT:-90}s"
}

cmd_start() {
  local name="" brokers=1 first_id=1 props=() extra=() node_props=()
  TIMEOUT=90
  while [ $# -gt 0 ]; do
    case "$1" in
      --brokers) brokers="$2"; shift 2 ;;
      --first-id) [[ "$2" =~ ^[0-9]+$ ]] || sg_die "--first-id takes a node id"; first_id="$2"; shift 2 ;;
      --dir) SG_RUN_DIR="$2"; shift 2 ;;
      --prop) props+=("$2"); shift 2 ;;
      --node-prop) [[ "$2" =~ ^[0-9]+:.+=.*$ ]] || sg_die "--node-prop ID:key=value"
                   node_props+=("$2"); shift 2 ;;
      --listener) [[ "$2" =~ ^[A-Z0-9_]+:[A-Z_]+$ ]] || sg_die "--listener NAME:PROTOCOL (upper case)"
                  extra+=("$2"); shift 2 ;;
      --timeout) TIMEOUT="$2"; shift 2 ;;
      -h|--help) sg_usage 0 ;;
      -*) sg_usage ;;
      *) [ -z "$name" ] || sg_usage; name="$1"; shift ;;
    esac
  done
  [ -n "$name" ] || sg_usage
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || sg_die "cluster name: letters, digits, - and _ only"
  sg_run_dir; sg_kafka_libs
  local cd t0=$SECONDS
  cd="$(cluster_dir "$name")"
  if [ -f "$cd/cluster.env" ]; then
    load_cluster "$name"
    for id in $BROKER_IDS $CONTROLLER_NODE; do
      sg_alive "$(node_pidfile "$name" "$id")" && sg_die "cluster $name is already running (stop it first)"
    done
    rm -rf "$cd"
  fi
  mkdir -p "$cd"

  local ids rf minisr nports ports
  ids="$(seq -s' ' "$first_id" $((first_id + brokers - 1)))"
  [ "$brokers" -gt 1 ] && [ "$CONTROLLER_ID" -ge "$first_id" ] && [ "$CONTROLLER_ID" -lt $((first_id + brokers)) ] &&
    sg_die "--first-id $first_id: the broker ids would include the controller's ($CONTROLLER_ID)"
  rf=$((brokers < 3 ? brokers : 3)); minisr=$((brokers < 2 ? 1 : 2))
  nports=$((brokers + 1 + brokers * ${#extra[@]}))
  read -r -a ports <<<"$(sg_free_ports "$nports")"
  local cport="${ports[$brokers]}" controller_node=""
  [ "$brokers" -gt 1 ] && controller_node="$CONTROLLER_ID"
  local bootstrap="" i=0 x=$((brokers + 1)) l
  {
    echo "NAME=$name"
    echo "EXTRA_LISTENERS=\"${extra[*]+"${extra[*]}"}\""
    for id in $ids; do
      for l in "${extra[@]+"${extra[@]}"}"; do
        echo "NODE_${id}_${l%%:*}_PORT=${ports[$x]}"; x=$((x + 1))
      done
    done
    echo "BROKER_IDS=\"$ids\""
    echo "CONTROLLER_NODE=\"$controller_node\""
    echo "CONTROLLER_PORT=$cport"
    for id in $ids; do
      echo "NODE_${id}_PORT=${ports[$i]}"
      bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:${ports[$i]}"
      i=$((i + 1))
    done
    echo "BOOTSTRAP=$bootstrap"
  } > "$cd/cluster.env"
  load_cluster "$name"

  # write server.properties for every node
  local cid nodes node roles nd port xl xa xmap
  cid="$("$SG_PY" -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')"
  nodes="$ids"; [ -n "$controller_node" ] && nodes="$controller_node $ids"
  for node in $nodes; do
    nd="$cd/node-$node"; mkdir -p "$nd/data"
    if [ "$node" = "$controller_node" ]; then roles=controller
    elif [ -z "$controller_node" ]; then roles=broker,controller
    else roles=broker; fi
    # extra listeners: "NAME://127.0.0.1:port" on brokers, protocol map entries
    xl=""; xmap=""
    for l in $EXTRA_LISTENERS; do
      xmap="$xmap,$l"
      [ "$roles" = controller ] || xl="$xl,${l%%:*}://127.0.0.1:$(eval echo "\$NODE_${node}_${l%%:*}_PORT")"
    done
    {
      echo "# generated by tests/kafka/cluster.sh for cluster '$name', node $node"
      echo "process.roles=$roles"
      echo "node.id=$node"
      echo "controller.listener.names=CONTROLLER"
      echo "controller.quorum.bootstrap.servers=127.0.0.1:$cport"
      echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$xmap"
      case "$roles" in
        controller)
          echo "listeners=CONTROLLER://127.0.0.1:$cport"
          echo "advertised.listeners=CONTROLLER://127.0.0.1:$cport" ;;
        broker,controller)
          port="$(eval echo "\$NODE_${node}_PORT")"
          echo "listeners=PLAINTEXT://127.0.0.1:$port$xl,CONTROLLER://127.0.0.1:$cport"
          echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port$xl,CONTROLLER://127.0.0.1:$cport"
          echo "inter.broker.listener.name=PLAINTEXT" ;;
        broker)
          port="$(eval echo "\$NODE_${node}_PORT")"
          echo "listeners=PLAINTEXT://127.0.0.1:$port$xl"
          echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port$xl"
          echo "inter.broker.listener.name=PLAINTEXT" ;;
      esac
      cat <<EOF
log.dirs=$nd/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=1
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$minisr
group.initial.rebalance.delay.ms=0
# lean: few threads on a 2-core machine
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
# fast failure detection so ISR shrinks quickly when a broker stops
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=4000
replica.lag.time.max.ms=6000
controlled.shutdown.enable=true
EOF
      for p in "${props[@]+"${props[@]}"}"; do echo "$p"; done
      for p in "${node_props[@]+"${node_props[@]}"}"; do
        if [ "${p%%:*}" = "$node" ]; then echo "${p#*:}"; fi
      done
    } > "$nd/server.properties"
  done

  # format all nodes in parallel (KRaft dynamic quorum, single voter); the id
  # is passed as --cluster-id=ID because a base64 id may start with "-"
  sg_log "cluster $name: formatting $(echo $nodes | wc -w) node(s) in $cd"
  local pids=() fmt
  for node in $nodes; do
    if [ "$node" = "$controller_node" ] || [ -z "$controller_node" ]; then fmt=--standalone
    else fmt=--no-initial-controllers; fi
    # shellcheck disable=SC2046
    "$SG_JAVA" -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Dlog4j2.configurationFile="$SG_KAFKA_DIR/log4j2.properties" -cp "$SG_KAFKA_LIBS/*" \
      kafka.tools.StorageTool format -c "$cd/node-$node/server.properties" --cluster-id="$cid" $fmt \
      > "$cd/node-$node/format.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$cd"/node-*/format.log >&2; sg_die "cluster $name: format failed"; }; done

  sg_log "cluster $name: starting $(echo $nodes | wc -w) JVM(s)"
  for node in $nodes; do launch_node "$name" "$node"; done
  [ -n "$controller_node" ] && wait_node "$name" "$controller_node" "127.0.0.1:$cport"
  for id in $ids; do wait_node "$name" "$id" "127.0.0.1:$(eval echo "\$NODE_${id}_PORT")"; done
  sg_log "cluster $name: listeners up after $((SECONDS - t0))s; waiting for $brokers broker(s) in metadata"
  wait_brokers "$name" "$brokers"
  sg_log "cluster $name: ready in $((SECONDS - t0))s, bootstrap $BOOTSTRAP"
}

cmd_env() {
  local name="$1" pre
  sg_run_dir; load_cluster "$name"
  pre="$(var_prefix "$name")"
  echo "SG_RUN_DIR=$SG_RUN_DIR"
  echo "${pre}_DIR=$(cluster_dir "$name")"
  echo "${pre}_BOOTSTRAP=$BOOTSTRAP"
  echo "${pre}_BROKERS=\"$BROKER_IDS\""
  for id in $BROKER_IDS; do
    echo "${pre}_BROKER_${id}=127.0.0.1:$(eval echo "\$NODE_${id}_PORT")"
    for l in ${EXTRA_LISTENERS:-}; do
      echo "${pre}_BROKER_${id}_${l%%:*}=127.0.0.1:$(eval echo "\$NODE_${id}_${l%%:*}_PORT")"
    done
    echo "${pre}_BROKER_${id}_PID=$(sg_alive "$(node_pidfile "$name" "$id")" && sg_pid "$(node_pidfile "$name" "$id")")"
  done
  echo "${pre}_CONTROLLER=127.0.0.1:$CONTROLLER_PORT"
  local cn="${CONTROLLER_NODE:-1}"
  echo "${pre}_CONTROLLER_ID=$cn"
  echo "${pre}_CONTROLLER_PID=$(sg_alive "$(node_pidfile "$name" "$cn")" && sg_pid "$(node_pidfile "$name" "$cn")")"
}

cmd_stop() {
  local name="$1" grace=10
  [ "${2:-}" = "--fast" ] && grace=0
  sg_run_dir
  [ -f "$(cluster_dir "$name")/cluster.env" ] || { sg_log "cluster $name: not found, nothing to stop"; return 0; }
  load_cluster "$name"
  # brokers first (in parallel), the controller last so they can shut down cleanly
  local pids=()
  for id in $BROKER_IDS; do sg_stop_pidfile "$(node_pidfile "$name" "$id")" "$grace" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || true; done
  [ -n "$CONTROLLER_NODE" ] && sg_stop_pidfile "$(node_pidfile "$name" "$CONTROLLER_NODE")" "$grace"
  sg_log "cluster $name: stopped"
}

check_broker() {
  load_cluster "$1"
  [[ " $BROKER_IDS " == *" $2 "* ]] || sg_die "cluster $1 has no broker $2 (brokers: $BROKER_IDS)"
  [ -z "$CONTROLLER_NODE" ] && sg_log "warning: cluster $1 is a single combined node; this stops its controller too"
  return 0
}

cmd_stop_broker() {
  local name="$1" id="$2" grace=15
  [ "${3:-}" = "--kill" ] && grace=0
  sg_run_dir; check_broker "$name" "$id"
  sg_stop_pidfile "$(node_pidfile "$name" "$id")" "$grace"
  sg_log "cluster $name: broker $id stopped"
}

cmd_start_broker() {
  local name="$1" id="$2" t0=$SECONDS n
  sg_run_dir; sg_kafka_libs; check_broker "$name" "$id"
  sg_alive "$(node_pidfile "$name" "$id")" && { sg_log "cluster $name: broker $id already running"; return 0; }
  launch_node "$name" "$id"
  TIMEOUT=90 wait_node "$name" "$id" "127.0.0.1:$(eval echo "\$NODE_${id}_PORT")"
  n=$(echo $BROKER_IDS | wc -w)
  local end=$((SECONDS + 90))
  # registered again once metadata lists it (other brokers may still be down)
  while ((SECONDS < end)); do
    kcat -L -b "127.0.0.1:$(eval echo "\$NODE_${id}_PORT")" -m 3 2>/dev/null \
      | grep -q "broker $id at " && break
    sleep 0.3
  done
  sg_log "cluster $name: broker $id back in $((SECONDS - t0))s"
}

cmd_signal_broker() {
  local sig="$1" name="$2" id="$3"
  sg_run_dir; check_broker "$name" "$id"
  local pf; pf="$(node_pidfile "$name" "$id")"
  sg_alive "$pf" || sg_die "cluster $name: broker $id is not running"
  kill "-$sig" "$(sg_pid "$pf")"
}

cmd_create_topic() {
  local name="$1" topic="$2" parts=1 rf=-1 cfg=()
  shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --partitions) parts="$2"; shift 2 ;;
      --rf) rf="$2"; shift 2 ;;
      --config) cfg+=("$2"); shift 2 ;;
      *) sg_usage ;;
    esac
  done
  sg_run_dir; load_cluster "$name"
  "$SG_PY" - "$BOOTSTRAP" "$topic" "$parts" "$rf" "${cfg[@]+"${cfg[@]}"}" <<'EOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
boot, topic, parts, rf, *cfg = sys.argv[1:]
conf = dict(c.split("=", 1) for c in cfg)
a = AdminClient({"bootstrap.servers": boot})
f = a.create_topics([NewTopic(topic, int(parts), int(rf), config=conf)], operation_timeout=30)
f[topic].result(timeout=60)
print(f"created topic {topic} ({parts} partitions, rf {rf}) on {boot}", file=sys.stderr)
EOF
}

cmd_run() {
  local name="$1" cls="$2"; shift 2
  sg_run_dir; sg_kafka_libs; load_cluster "$name"
  exec "$SG_JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$SG_KAFKA_DIR/log4j2.properties" -Dlog4j2.level=WARN \
    -cp "$SG_KAFKA_LIBS/*" "$cls" --bootstrap-server "$BOOTSTRAP" "$@"
}

cmd_status() {
  sg_run_dir
  echo "run dir: $SG_RUN_DIR"
  local pf
  for pf in "$SG_RUN_DIR"/pids/*.pid; do
    [ -e "$pf" ] || continue
    if sg_alive "$pf"; then echo "  running  $(cat "$pf")"; else echo "  dead     $(cat "$pf")"; fi
  done
}

cmd_stop_all() {
  local grace=10 clean=0 pf pids=()
  for a in "$@"; do case "$a" in --fast) grace=0 ;; --clean) clean=1 ;; *) sg_usage ;; esac; done
  sg_run_dir
  # first mirrors / syncgate / anything else, then clusters (brokers before controllers)
  for pf in "$SG_RUN_DIR"/pids/*.pid; do
    [ -e "$pf" ] || continue
    case "$pf" in */cluster.*|*/watchdog.pid) continue ;; esac
    sg_stop_pidfile "$pf" "$grace" & pids+=($!)
  done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" || true; done
  pids=()
  for pf in "$SG_RUN_DIR"/pids/cluster.*.pid; do
    [ -e "$pf" ] || continue
    grep -q " node $CONTROLLER_ID\$" "$pf" && continue
    sg_stop_pidfile "$pf" "$grace" & pids+=($!)
  done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" || true; done
  for pf in "$SG_RUN_DIR"/pids/cluster.*.pid; do [ -e "$pf" ] && sg_stop_pidfile "$pf" "$grace"; done
  # backstop: any JVM still carrying this run's marker (e.g. a lost pid file)
  local pid
  for pid in $(pgrep -f -- "-Dsyncgate.testbed=$SG_RUN_DIR( |$)" || true); do
    sg_log "stop-all: killing leftover process $pid"; kill -KILL "$pid" 2>/dev/null || true
  done
  [ -f "$SG_RUN_DIR/pids/watchdog.pid" ] && { kill "$(sg_pid "$SG_RUN_DIR/pids/watchdog.pid")" 2>/dev/null || true; rm -f "$SG_RUN_DIR/pids/watchdog.pid"; }
  sg_log "stop-all: everything from $SG_RUN_DIR stopped"
  if [ $clean -eq 1 ]; then
    rm -rf "$SG_RUN_DIR"
    [ "$(cat "$SG_STATE_HOME/current" 2>/dev/null)" = "$SG_RUN_DIR" ] && rm -f "$SG_STATE_HOME/current"
  fi
  return 0
}

[ $# -ge 1 ] || sg_usage
cmd="$1"; shift
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) [ $# -ge 1 ] || sg_usage; cmd_stop "$@" ;;
  env) [ $# -eq 1 ] || sg_usage; cmd_env "$1" ;;
  stop-broker) [ $# -ge 2 ] || sg_usage; cmd_stop_broker "$@" ;;
  start-broker) [ $# -eq 2 ] || sg_usage; cmd_start_broker "$@" ;;
  pause-broker) [ $# -eq 2 ] || sg_usage; cmd_signal_broker STOP "$@" ;;
  resume-broker) [ $# -eq 2 ] || sg_usage; cmd_signal_broker CONT "$@" ;;
  create-topic) [ $# -ge 2 ] || sg_usage; cmd_create_topic "$@" ;;
  run) [ $# -ge 2 ] || sg_usage; cmd_run "$@" ;;
  status) cmd_status ;;
  stop-all) cmd_stop_all "$@" ;;
  -h|--help|help) sg_usage 0 ;;
  *) sg_usage ;;
esac
