#!/usr/bin/env bash
# Checks the deployment files; CI calls it (bash deploy/check.sh).
#
#  1. promtool: the Prometheus config, the alert rules, the rules' unit tests
#     (deploy/prometheus/alerts_test.yml), and that every query of the Grafana
#     dashboard parses.
#  2. Every feedworker_* metric named by the alert rules and the dashboard is in
#     the "Metric names" table of docs/ARCHITECTURE.md.
#  3. The dashboard is valid JSON, the YAML files parse (python3 with PyYAML).
#  4. `docker compose config -q` (or a v2 docker-compose), when a compose tool
#     is installed; it needs no Docker engine.
#
# promtool comes from PATH, from $PROMTOOL, or from Debian's `prometheus`
# package: only the promtool binary is extracted from the package (apt-get
# download + dpkg-deb) into a cache directory, so no Prometheus server is
# installed or started and root is not needed (except for apt-get update when
# the package lists are missing). Set FEEDWORKER_NO_FETCH=1 to skip the fetch.
# A missing promtool fails the run when CI=true and is reported otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s.%N)
failed=0
say() { printf 'check.sh: %s\n' "$*"; }
fail() { printf 'check.sh: FAIL: %s\n' "$*" >&2; failed=1; }
elapsed() { awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1fs", e - s }'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- promtool
cache_dir="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/feedworker/tools"

fetch_promtool() { # extracts usr/bin/promtool of Debian's prometheus package
  command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || return 1
  local dir="$tmp/deb"
  mkdir -p "$dir" && chmod 755 "$tmp" "$dir"
  if ! (cd "$dir" && apt-get download -qq prometheus >/dev/null 2>&1); then
    if [ "$(id -u)" = 0 ]; then
      say "apt-get update (package lists missing or stale)"
      apt-get update -qq >/dev/null 2>&1 || return 1
      (cd "$dir" && apt-get download -qq prometheus >/dev/null 2>&1) || return 1
    else
      return 1
    fi
  fi
  local deb
  deb=$(find "$dir" -maxdepth 1 -name 'prometheus_*.deb' | head -n 1)
  [ -n "$deb" ] || return 1
  mkdir -p "$cache_dir"
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/promtool >"$cache_dir/promtool.part" || return 1
  chmod 755 "$cache_dir/promtool.part" && mv "$cache_dir/promtool.part" "$cache_dir/promtool"
  say "fetched promtool from $(basename "$deb") into $cache_dir ($(elapsed))"
}

promtool="${PROMTOOL:-}"
if [ -z "$promtool" ]; then
  if command -v promtool >/dev/null 2>&1; then
    promtool=$(command -v promtool)
  elif [ -x "$cache_dir/promtool" ]; then
    promtool="$cache_dir/promtool"
  elif [ "${FEEDWORKER_NO_FETCH:-}" != 1 ]; then
    say "promtool not found: fetching it from the Debian package prometheus"
    if fetch_promtool; then
      promtool="$cache_dir/promtool"
    else
      say "could not fetch promtool (no apt-get, no package lists, or no network)"
    fi
  fi
fi

if [ -n "$promtool" ]; then
  say "using $promtool ($("$promtool" --version 2>&1 | head -n 1))"
  "$promtool" check config deploy/prometheus/prometheus.yml || fail "promtool check config"
  "$promtool" check rules deploy/prometheus/alerts.yml || fail "promtool check rules"
  "$promtool" test rules deploy/prometheus/alerts_test.yml || fail "promtool test rules"

  # Every dashboard query must parse: turn them into recording rules.
  if command -v jq >/dev/null 2>&1; then
    {
      echo "groups:"
      echo "  - name: dashboard"
      echo "    rules:"
      # shellcheck disable=SC2016 # the $ are Grafana's variables, not the shell's
      jq -r '[.. | objects | select(has("expr")) | .expr] | to_entries[]
             | "      - record: dashboard:query_\(.key)\n        expr: \(.value | @json)"' \
        deploy/grafana/dashboards/feedworker.json |
        sed -e 's/\$__rate_interval/1m/g' -e 's/\$__range/1h/g' -e 's/\$__interval/1m/g' -e 's/\$feed/.*/g'
    } >"$tmp/dashboard-rules.yml"
    n=$(grep -c 'record:' "$tmp/dashboard-rules.yml" || true)
    if "$promtool" check rules "$tmp/dashboard-rules.yml" >"$tmp/dashboard-rules.out" 2>&1; then
      say "dashboard: $n queries parse"
    else
      cat "$tmp/dashboard-rules.out" >&2
      fail "dashboard queries do not parse"
    fi
  else
    say "skipped the dashboard query check: no jq"
  fi
elif [ "${CI:-}" = true ]; then
  fail "promtool is not available (CI=true)"
else
  say "SKIPPED promtool checks: promtool not available"
fi

# ------------------------------------------------------------ metric names
names=$(cat deploy/prometheus/alerts.yml deploy/grafana/dashboards/feedworker.json |
  grep -oE 'feedworker_[a-z0-9_]*[a-z0-9]' | sed -E 's/_(bucket|count|sum)$//' | sort -u)
unknown=""
for name in $names; do
  grep -q "\`$name\`" docs/ARCHITECTURE.md || unknown="$unknown $name"
done
if [ -n "$unknown" ]; then
  fail "metric names not in docs/ARCHITECTURE.md:$unknown"
else
  say "metric names: $(echo "$names" | wc -l) names, all in docs/ARCHITECTURE.md"
fi

# ------------------------------------------------------------ JSON and YAML
if command -v jq >/dev/null 2>&1; then
  jq empty deploy/grafana/dashboards/feedworker.json || fail "dashboard JSON"
elif command -v python3 >/dev/null 2>&1; then
  python3 -m json.tool deploy/grafana/dashboards/feedworker.json >/dev/null || fail "dashboard JSON"
fi
if command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' 2>/dev/null; then
  if python3 - <<'EOF'; then
import glob, yaml
files = ["docker-compose.yml"] + sorted(glob.glob("deploy/**/*.y*ml", recursive=True))
for f in files:
    with open(f) as fh:
        list(yaml.safe_load_all(fh))
print(f"check.sh: YAML: {len(files)} files parse")
EOF
    :
  else
    fail "YAML does not parse"
  fi
else
  say "skipped the YAML parse check: no python3 with PyYAML"
fi

# ---------------------------------------------------------- docker compose
compose=""
if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  compose="docker compose"
elif command -v docker-compose >/dev/null 2>&1 &&
  docker-compose version --short 2>/dev/null | grep -q '^v\?2'; then
  compose="docker-compose" # v2 standalone; v1 (Python) predates the top-level `name`
fi
if [ -n "$compose" ]; then
  if $compose -f docker-compose.yml config -q; then
    say "$compose config: valid"
  else
    fail "$compose config"
  fi
else
  say "skipped docker compose config: no compose plugin or docker-compose installed"
fi

if [ "$failed" != 0 ]; then
  say "FAILED ($(elapsed))"
  exit 1
fi
say "all checks passed ($(elapsed))"
