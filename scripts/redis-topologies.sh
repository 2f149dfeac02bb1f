#!/usr/bin/env bash
# Starts the Redis topologies the tests run against, besides the standalone
# Redis: a Redis Cluster of three masters and a Sentinel set (one master, one
# replica, three sentinels). Each server runs in its own temporary directory.
#
#   source scripts/redis-topologies.sh && topologies_start   # exports the env
#   topologies_stop                                          # stops them all
#
# Exported for the tests:
#   REDIS_CLUSTER_ADDRS    127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
#   REDIS_SENTINEL_ADDRS   127.0.0.1:26401,127.0.0.1:26402,127.0.0.1:26403
#   REDIS_SENTINEL_MASTER  feedworker-test
# Ports: cluster 7101-7103, Sentinel master 6401, replica 6402, sentinels
# 26401-26403. A topology already answering on its ports is reused as is.

TOPO_CLUSTER_PORTS=(7101 7102 7103)
TOPO_SENTINEL_DATA_PORTS=(6401 6402)
TOPO_SENTINEL_PORTS=(26401 26402 26403)
TOPO_MASTER_NAME=feedworker-test
TOPO_DIR=""
TOPO_STARTED=()

topo_ping() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

topo_wait() { # what, command...
  local what=$1; shift
  for _ in $(seq 1 150); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  echo "topologies: timed out waiting for $what" >&2
  return 1
}

topo_server() { # port, extra args...
  local port=$1; shift
  mkdir -p "$TOPO_DIR/$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$TOPO_DIR/$port" --save "" --appendonly no \
    --daemonize yes --pidfile "$TOPO_DIR/$port/redis.pid" --logfile "$TOPO_DIR/$port/redis.log" "$@" >/dev/null
  TOPO_STARTED+=("$port")
  topo_wait "redis-server on $port" topo_ping "$port"
}

topo_cluster_ok() {
  redis-cli -p "${TOPO_CLUSTER_PORTS[0]}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'
}

topo_sentinel_ready() {
  local p
  for p in "${TOPO_SENTINEL_PORTS[@]}"; do
    redis-cli -p "$p" sentinel get-master-addr-by-name "$TOPO_MASTER_NAME" 2>/dev/null | grep -q 127.0.0.1 || return 1
  done
  # Every sentinel must know the other two and the replica before a
  # failover test can rely on them.
  redis-cli -p "${TOPO_SENTINEL_PORTS[0]}" sentinel master "$TOPO_MASTER_NAME" 2>/dev/null |
    awk 'p=="num-other-sentinels"{s=$1} p=="num-slaves"{r=$1} {p=$1} END{exit !(s>=2 && r>=1)}' || return 1
  # And the master must count its replica as online: with
  # min-replicas-to-write it refuses writes (NOREPLICAS) until the replica
  # has synced, which a sentinel knowing of it does not mean.
  redis-cli -p "${TOPO_SENTINEL_DATA_PORTS[0]}" info replication 2>/dev/null | grep -q '^slave0:.*state=online'
}

topologies_start() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "topologies: redis-server or redis-cli missing; cluster and sentinel tests will skip (fail under CI=true)" >&2
    return 0
  fi
  TOPO_DIR=$(mktemp -d -t feedworker-topologies.XXXXXX)
  local p
  if topo_cluster_ok; then
    echo "topologies: reusing the cluster on ${TOPO_CLUSTER_PORTS[*]}" >&2
  else
    for p in "${TOPO_CLUSTER_PORTS[@]}"; do
      topo_server "$p" --cluster-enabled yes --cluster-config-file "$TOPO_DIR/$p/nodes.conf" --cluster-node-timeout 2000
    done
    redis-cli --cluster create $(printf '127.0.0.1:%s ' "${TOPO_CLUSTER_PORTS[@]}") --cluster-replicas 0 --cluster-yes >"$TOPO_DIR/cluster-create.log" 2>&1
    topo_wait "cluster_state:ok" topo_cluster_ok
  fi
  if topo_ping "${TOPO_SENTINEL_PORTS[0]}"; then
    echo "topologies: reusing the sentinels on ${TOPO_SENTINEL_PORTS[*]}" >&2
  else
    # min-replicas-to-write: a master cut off from its replica (a demoted
    # one that the sentinels have not reconfigured yet) refuses writes
    # rather than keep some that the failover throws away.
    topo_server "${TOPO_SENTINEL_DATA_PORTS[0]}" --min-replicas-to-write 1 --min-replicas-max-lag 10
    topo_server "${TOPO_SENTINEL_DATA_PORTS[1]}" --min-replicas-to-write 1 --min-replicas-max-lag 10 --replicaof 127.0.0.1 "${TOPO_SENTINEL_DATA_PORTS[0]}"
    for p in "${TOPO_SENTINEL_PORTS[@]}"; do
      mkdir -p "$TOPO_DIR/$p"
      cat >"$TOPO_DIR/$p/sentinel.conf" <<EOF
port $p
bind 127.0.0.1
daemonize yes
pidfile $TOPO_DIR/$p/redis.pid
logfile $TOPO_DIR/$p/redis.log
dir $TOPO_DIR/$p
sentinel monitor $TOPO_MASTER_NAME 127.0.0.1 ${TOPO_SENTINEL_DATA_PORTS[0]} 2
sentinel down-after-milliseconds $TOPO_MASTER_NAME 2000
sentinel failover-timeout $TOPO_MASTER_NAME 6000
EOF
      redis-server "$TOPO_DIR/$p/sentinel.conf" --sentinel >/dev/null
      TOPO_STARTED+=("$p")
    done
    topo_wait "the sentinels to know $TOPO_MASTER_NAME, its replica and each other" topo_sentinel_ready
  fi
  export REDIS_CLUSTER_ADDRS REDIS_SENTINEL_ADDRS REDIS_SENTINEL_MASTER
  REDIS_CLUSTER_ADDRS=$(printf '127.0.0.1:%s,' "${TOPO_CLUSTER_PORTS[@]}"); REDIS_CLUSTER_ADDRS=${REDIS_CLUSTER_ADDRS%,}
  REDIS_SENTINEL_ADDRS=$(printf '127.0.0.1:%s,' "${TOPO_SENTINEL_PORTS[@]}"); REDIS_SENTINEL_ADDRS=${REDIS_SENTINEL_ADDRS%,}
  REDIS_SENTINEL_MASTER=$TOPO_MASTER_NAME
  echo "topologies: REDIS_CLUSTER_ADDRS=$REDIS_CLUSTER_ADDRS REDIS_SENTINEL_ADDRS=$REDIS_SENTINEL_ADDRS REDIS_SENTINEL_MASTER=$REDIS_SENTINEL_MASTER" >&2
}

# topologies_stop stops only the servers topologies_start started (by their
# pid files) and removes their directories.
topologies_stop() {
  local p pid
  for p in "${TOPO_STARTED[@]}"; do
    pid=$(cat "$TOPO_DIR/$p/redis.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for p in "${TOPO_STARTED[@]}"; do
    pid=$(cat "$TOPO_DIR/$p/redis.pid" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  TOPO_STARTED=()
  [ -n "$TOPO_DIR" ] && rm -rf "$TOPO_DIR"
  TOPO_DIR=""
}

# Run directly: start, print the exports, and keep running until
# interrupted (for development).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  trap topologies_stop EXIT
  topologies_start
  echo "export REDIS_CLUSTER_ADDRS=$REDIS_CLUSTER_ADDRS REDIS_SENTINEL_ADDRS=$REDIS_SENTINEL_ADDRS REDIS_SENTINEL_MASTER=$REDIS_SENTINEL_MASTER"
  echo "topologies: running; Ctrl-C stops them" >&2
  while sleep 3600; do :; done
fi
