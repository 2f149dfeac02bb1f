#!/usr/bin/env bash
# The README's test command (`make test` runs this): makes sure a Redis answers,
# starts a Redis Cluster and a Sentinel set (scripts/redis-topologies.sh), then
# runs the format check, go vet, the race-enabled tests and the deploy checks.
set -euo pipefail
cd "$(dirname "$0")/.."

redis_ping() { # host port
  if command -v redis-cli >/dev/null 2>&1; then
    redis-cli -h "$1" -p "$2" ping 2>/dev/null | grep -q PONG
  else
    (exec 3<>"/dev/tcp/$1/$2" && printf 'PING\r\n' >&3 && timeout 2 head -c 5 <&3 | grep -q PONG) 2>/dev/null
  fi
}

if [ -z "${REDIS_URL:-}" ]; then
  if redis_ping 127.0.0.1 6379; then
    export REDIS_URL="redis://127.0.0.1:6379/0"
  else
    if ! redis_ping 127.0.0.1 6390; then
      if ! command -v redis-server >/dev/null 2>&1; then
        echo "test: installing the Debian package redis-server" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
      fi
      redis-server --port 6390 --save "" --appendonly no --daemonize yes >/dev/null
      for _ in $(seq 1 50); do redis_ping 127.0.0.1 6390 && break; sleep 0.1; done
    fi
    export REDIS_URL="redis://127.0.0.1:6390/0"
  fi
fi
echo "test: REDIS_URL=$REDIS_URL"

# A Redis Cluster (ports 7101-7103) and a Sentinel set (6401, 6402,
# 26401-26403) for the dedupe contract suite and the end-to-end tests on
# those topologies; stopped when this script ends.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  echo "test: installing the Debian package redis-server (cluster and sentinel tests)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null || true
fi
# shellcheck source=scripts/redis-topologies.sh
source scripts/redis-topologies.sh
trap topologies_stop EXIT
topologies_start

echo "test: gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed on:"; echo "$unformatted"; exit 1; fi

echo "test: go vet"
go vet ./...

echo "test: go test -race"
go test -race -count=1 ./...

if [ -x deploy/check.sh ]; then
  echo "test: deploy checks"
  bash deploy/check.sh
fi
