#!/usr/bin/env bash
# Browser test of the console: runs the quickstart worker with three more
# feeds (one that fails, one whose filter drops an item, one whose items the
# API refuses for good), loads the console and feed pages in headless
# Chromium and checks what a person would look for; then checks the guarded
# actions over HTTP (poll now refused without the admin token, run with it;
# the sign-in form's session and CSRF token). Installs Debian's chromium
# when it is missing and we are root.
# Usage: bash scripts/browser-test.sh   (screenshots are left in $OUT, default /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}"
mkdir -p "$out"

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
pid=""
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 19090)
token="browser-test-$RANDOM$RANDOM"
go build -o "$work/feedworker" ./cmd/feedworker
# The quickstart config with its state in the temp folder, the admin server
# on a free port with a token, the feeds beside the original config, and
# three feeds that give the console something to explain.
sed -e "s|path: .feedworker/quickstart.db|path: $work/store.db|" \
    -e "s|sandbox_data: .feedworker/sandbox.json|sandbox_data: $work/sandbox.json|" \
    -e "s|listen: 127.0.0.1:9090 |listen: 127.0.0.1:$port |" \
    -e "s|url: file:feeds/|url: file:$PWD/examples/feeds/|" \
    examples/quickstart.yaml > "$work/quickstart.yaml"
grep -q "listen: 127.0.0.1:$port" "$work/quickstart.yaml" || { echo "browser-test: could not set admin.listen"; exit 1; }
sed -i "s|^admin:|admin:\n  token: $token|" "$work/quickstart.yaml"
cat >> "$work/quickstart.yaml" <<EOF

  # For the browser test: a feed that fails on every poll,
  - id: broken-feed
    url: file:$work/no-such-feed.xml
  # one whose filter drops an item,
  - id: no-windows
    url: file:$PWD/examples/feeds/feed-rs__jsonfeed_example_1.json
    exclude:
      keywords: [Windows 95]
    # The same file as daring-fireball: without this its items would be
    # reposts of that feed's (one Content per story across feeds).
    reposts:
      match: []
  # and one whose items the API refuses (a category id it does not have).
  - id: bad-category
    url: file:$PWD/examples/feeds/rome__rss2.0-w3cgeo.xml
    initial_items: 1
    category_ids: [999999]
EOF
"$work/feedworker" validate --config "$work/quickstart.yaml" >/dev/null
"$work/feedworker" run --config "$work/quickstart.yaml" >"$work/worker.log" 2>&1 &
pid=$!

base="http://127.0.0.1:$port"
fail=0
wait_for() { # what, command...
  local what=$1; shift
  for _ in $(seq 1 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "browser-test: timed out waiting for $what"; cat "$work/worker.log"; exit 1
}
wait_for "the first pass" grep -q "first pass done" "$work/worker.log"
# The dead letter and the history are written a moment after the pass.
wait_for "the dead letter" sh -c "curl -fsS $base/status.json | grep -q 'does not exist'"
wait_for "the history of the filtered item" sh -c "curl -fsS $base/feeds/no-windows | grep -q 'Windows 95'"
# The history is written every second, apart from the pass: "first pass
# done" can come while the last feed's poll and sends wait for that write.
wait_for "every feed's first poll in the history" sh -c "curl -fsS $base/status.json | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if len(s[\"feeds\"]) == 7 and all(f.get(\"recent_polls\") for f in s[\"feeds\"]) else 1)'"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/chrome")
dump() { timeout 60 chromium "${flags[@]}" --dump-dom "$1" 2>/dev/null; }
shot() { timeout 60 chromium "${flags[@]}" --window-size="$2" --screenshot="$3" "$1" >/dev/null 2>&1 || true; }
check() { # page-name, dom, wanted text...
  local name=$1 dom=$2; shift 2
  for want in "$@"; do
    if ! grep -qF -- "$want" <<<"$dom"; then echo "browser-test: $name lacks: $want"; fail=1; fi
  done
}

console=$(dump "$base/")
check console "$console" \
  '<table id="feeds">' 'data-feed="thoughtbot-blog"' 'data-feed="daring-fireball"' 'data-feed="slashdot"' 'data-feed="tour-dates"' \
  '>ok<' '<svg id="sends"' 'class="pub"' '<svg id="outbox"' 'id="gate"' \
  'data-feed="broken-feed" class="feedrow failing"' 'no-such-feed.xml' \
  'category 999999 does not exist' 'sign in'
# The failing feed's strip shows red polls, the healthy ones green.
row() { python3 -c 'import sys; d=sys.stdin.read(); i=d.index("data-feed=\""+sys.argv[1]+"\""); print(d[i:d.index("</tr>", i)])' "$1" <<<"$console"; }
grep -qF '<span class="bad" title=' <<<"$(row broken-feed)" || { echo "browser-test: the failing feed's health strip is not red"; fail=1; }
grep -qF '<span class="ok" title=' <<<"$(row slashdot)" || { echo "browser-test: a healthy feed's health strip is not green"; row slashdot; fail=1; }
rows=$(grep -o '<tr data-feed=' <<<"$console" | wc -l)
[ "$rows" -eq 7 ] || { echo "browser-test: $rows feed rows, want 7"; fail=1; }

filtered=$(dump "$base/feeds/no-windows")
check "feed page" "$filtered" 'Instagram for Windows 95' 'filtered: excluded: keyword "windows 95" in title' 'published as content' \
  'class="content" href="/sandbox/v3/content/' 'Recent polls' 'exclude:'
dead=$(dump "$base/feeds/bad-category")
check "dead feed page" "$dead" 'dead letter after 1 attempts, HTTP 4' 'category 999999 does not exist' 'not published: older than initial_items'
found=$(dump "$base/search?q=windows+95")
check "search" "$found" 'no-windows' 'Instagram for Windows 95'

shot "$base/" 1400,1500 "$out/feedworker-console.png"
shot "$base/feeds/no-windows" 1400,1300 "$out/feedworker-feed.png"

# Actions. Without the token: refused, and nothing is polled.
polls() { curl -fsS "$base/status.json" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(next(len(f.get("recent_polls") or []) for f in s["feeds"] if f["id"]=="slashdot"))'; }
before=$(polls)
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/feeds/slashdot/poll")
[ "$code" = 401 ] || { echo "browser-test: poll now without a token answered $code, want 401"; fail=1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer wrong" "$base/feeds/slashdot/poll")
[ "$code" = 401 ] || { echo "browser-test: poll now with a wrong token answered $code, want 401"; fail=1; }
[ "$(polls)" = "$before" ] || { echo "browser-test: a refused poll now polled"; fail=1; }
# With it: a poll happens (the strip grows by one).
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" "$base/feeds/slashdot/poll")
[ "$code" = 202 ] || { echo "browser-test: poll now with the token answered $code, want 202"; fail=1; }
wait_for "the poll asked for" sh -c "[ \"\$(curl -fsS $base/status.json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(next(len(f.get(\"recent_polls\") or []) for f in s[\"feeds\"] if f[\"id\"]==\"slashdot\"))')\" -gt $before ]"
# The sign-in form: a session cookie, and forms that need its CSRF token.
jar="$work/cookies"
curl -fsS -o /dev/null -c "$jar" -X POST -H "Origin: $base" --data-urlencode "token=$token" --data-urlencode "next=/" "$base/signin"
page=$(curl -fsS -b "$jar" "$base/")
csrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' <<<"$page" | head -1 | sed 's/.*value="//; s/"//')
[ -n "$csrf" ] || { echo "browser-test: signed in, but the page has no action form"; fail=1; }
grep -qF '>poll now<' <<<"$page" || { echo "browser-test: signed in, but no poll now button"; fail=1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" -X POST -H "Origin: $base" --data "next=/" "$base/feeds/slashdot/poll")
[ "$code" = 403 ] || { echo "browser-test: a form without its CSRF token answered $code, want 403"; fail=1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" -X POST -H "Origin: http://evil.example" --data "csrf=$csrf&next=/" "$base/feeds/slashdot/poll")
[ "$code" = 403 ] || { echo "browser-test: a cross-origin form answered $code, want 403"; fail=1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" -X POST -H "Origin: $base" --data "csrf=$csrf&next=/" "$base/feeds/slashdot/poll")
[ "$code" = 303 ] || { echo "browser-test: the signed-in form answered $code, want 303"; fail=1; }
dlid=$(curl -fsS "$base/status.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dead_letters"][0]["id"])')
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" -X POST -H "Origin: $base" --data-urlencode "id=$dlid" --data "csrf=$csrf&next=/" "$base/console/retry")
[ "$code" = 303 ] || { echo "browser-test: retry answered $code, want 303"; fail=1; }
grep -q 'console: action.*action=poll_now.*by=bearer' "$work/worker.log" || { echo "browser-test: the poll now was not logged"; fail=1; }
grep -q 'console: action.*action=retry.*by=session' "$work/worker.log" || { echo "browser-test: the retry was not logged"; fail=1; }
# Refused: no token, a wrong one, a form without its CSRF token, a cross-origin form.
metrics=$(curl -fsS "$base/metrics")
grep -qF 'feedworker_console_actions_total{action="poll_now",result="refused"} 4' <<<"$metrics" \
  || { echo "browser-test: refused actions not counted"; grep console_actions <<<"$metrics"; fail=1; }

# explain, against the store of the stopped worker.
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
explain=$("$work/feedworker" explain --config "$work/quickstart.yaml" --item "windows 95" 2>&1) || { echo "browser-test: explain failed: $explain"; fail=1; }
check explain "$explain" 'feed no-windows' 'filtered: excluded: keyword "windows 95" in title' 'feed daring-fireball' 'published as content'

if [ "$fail" -ne 0 ]; then echo "$console" | head -80; exit 1; fi
echo "browser-test: console, feed page, search, actions and explain checked (screenshots: $out/feedworker-console.png, $out/feedworker-feed.png)"
