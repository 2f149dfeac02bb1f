#!/usr/bin/env bash
# Browser test of the status page: runs the quickstart worker, loads its
# status page in headless Chromium and checks the feed table the browser
# rendered. Installs Debian's chromium when it is missing and we are root.
# Usage: bash scripts/browser-test.sh   (a screenshot is left in $OUT, default /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}"

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "browser-test: installing Debian's chromium" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
  elif [ "${CI:-}" = "true" ]; then
    echo "browser-test: chromium is missing and cannot be installed" >&2; exit 1
  else
    echo "browser-test: skipped: chromium is not installed (apt-get install chromium)"; exit 0
  fi
fi

work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 19090)
go build -o "$work/feedworker" ./cmd/feedworker
# The quickstart config with its state in the temp folder and the admin
# server on a free port; the feeds stay beside the original config.
sed -e "s|path: .feedworker/quickstart.db|path: $work/store.db|" \
    -e "s|sandbox_data: .feedworker/sandbox.json|sandbox_data: $work/sandbox.json|" \
    -e "s|listen: 127.0.0.1:9090|listen: 127.0.0.1:$port|" \
    -e "s|url: file:feeds/|url: file:$PWD/examples/feeds/|" \
    examples/quickstart.yaml > "$work/quickstart.yaml"
"$work/feedworker" run --config "$work/quickstart.yaml" >"$work/worker.log" 2>&1 &
pid=$!

for _ in $(seq 1 100); do
  grep -q "first pass done" "$work/worker.log" && break
  sleep 0.2
done
grep -q "first pass done" "$work/worker.log" || { echo "browser-test: the worker did not finish its first pass"; cat "$work/worker.log"; exit 1; }

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$work/chrome")
url="http://127.0.0.1:$port/"
dom=$(timeout 60 chromium "${flags[@]}" --dump-dom "$url" 2>/dev/null)
timeout 60 chromium "${flags[@]}" --window-size=1400,900 --screenshot="$out/feedworker-status.png" "$url" >/dev/null 2>&1 || true

fail=0
for want in '<table id="feeds">' 'data-feed="thoughtbot-blog"' 'data-feed="daring-fireball"' \
            'data-feed="slashdot"' 'data-feed="tour-dates"' '>ok<'; do
  if ! grep -qF "$want" <<<"$dom"; then echo "browser-test: the rendered page lacks $want"; fail=1; fi
done
rows=$(grep -o '<tr data-feed=' <<<"$dom" | wc -l)
[ "$rows" -eq 4 ] || { echo "browser-test: $rows feed rows, want 4"; fail=1; }
if [ "$fail" -ne 0 ]; then echo "$dom" | head -50; exit 1; fi
echo "browser-test: status page rendered with $rows feed rows (screenshot: $out/feedworker-status.png)"
