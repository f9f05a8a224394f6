#!/usr/bin/env bash
# `make examples`: runs every quick start of examples/ against a fresh broker.
#
# It builds sluice and the Go examples into a temporary directory, starts
# `sluice serve` with examples/config/quickstart.toml, a temporary data
# directory, and STOMP, AMQP 1.0 and STOMP over WebSocket on free loopback
# ports (port 0: the broker logs the addresses it bound), then runs the
# examples one at a time with the ports in SLUICE_STOMP_PORT, SLUICE_AMQP_PORT
# and SLUICE_WEBSOCKET_PORT, each under a time limit.
# Then it stops the broker (which must shut down cleanly), prints a summary
# and exits non-zero if any example failed.
#
# The Python examples need Debian's python3-stomp and python3-qpid-proton for
# /usr/bin/python3, the Node ones Node 20 and npm: examples/node's packages
# are installed with `npm ci` when node_modules is missing or older than the
# lock file; the browser one also needs Chromium (/usr/bin/chromium, or
# CHROMIUM). An example whose client is not installed is skipped, except
# under CI (CI set) or with SLUICE_EXAMPLES_REQUIRE=1, where that is a
# failure. examples/java is not run: it needs Qpid JMS from Maven Central.
#
# Knobs (environment): SLUICE_EXAMPLES_PYTHON (/usr/bin/python3),
# EXAMPLE_TIMEOUT (seconds per example, 60), KEEP=1 (keep the temporary
# directory with the broker's log and each example's output).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${SLUICE_EXAMPLES_PYTHON:-/usr/bin/python3}
EXAMPLE_TIMEOUT=${EXAMPLE_TIMEOUT:-60}
REQUIRE=0
if [ -n "${CI:-}" ] || [ "${SLUICE_EXAMPLES_REQUIRE:-}" = 1 ]; then REQUIRE=1; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-examples.XXXXXX")
BROKER_PID=""

# stop_broker sends SIGTERM and waits up to 30 s for a clean exit, then kills.
# It returns the broker's exit status (137 when it had to be killed).
stop_broker() {
  local pid=$BROKER_PID status=0
  [ -n "$pid" ] || return 0
  BROKER_PID=""
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "sluice (pid $pid) did not stop within 30 s: killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" || status=$?
  return "$status"
}

cleanup() {
  set +e
  stop_broker >/dev/null 2>&1
  if [ "${KEEP:-}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build sluice and the Go examples"
mkdir -p "$TMP/bin"
go build -o "$TMP/bin/sluice" ./cmd/sluice
go build -o "$TMP/bin/" ./examples/go/...

CONFIG=examples/config/quickstart.toml
"$TMP/bin/sluice" serve --check-config --config "$CONFIG" >/dev/null

echo "== start sluice ($CONFIG, data in a temporary directory)"
"$TMP/bin/sluice" serve --config "$CONFIG" --data "$TMP/data" \
  --stomp 127.0.0.1:0 --amqp 127.0.0.1:0 --admin "" --websocket 127.0.0.1:0 --log-level info 2>"$TMP/sluice.log" &
BROKER_PID=$!
started=0
for _ in $(seq 1 300); do # 30 s
  if grep -q 'msg="sluice started"' "$TMP/sluice.log"; then started=1; break; fi
  kill -0 "$BROKER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ "$started" != 1 ]; then
  echo "sluice did not start:" >&2
  cat "$TMP/sluice.log" >&2
  exit 1
fi
port_of() { sed -n "s/.*msg=listening protocol=$1 addr=127\.0\.0\.1:\([0-9]*\).*/\1/p" "$TMP/sluice.log" | head -1; }
SLUICE_STOMP_PORT=$(port_of stomp)
SLUICE_AMQP_PORT=$(port_of amqp)
SLUICE_WEBSOCKET_PORT=$(port_of stomp-websocket)
export SLUICE_STOMP_PORT SLUICE_AMQP_PORT SLUICE_WEBSOCKET_PORT
echo "sluice pid $BROKER_PID: STOMP 127.0.0.1:$SLUICE_STOMP_PORT, AMQP 1.0 127.0.0.1:$SLUICE_AMQP_PORT," \
  "STOMP over WebSocket ws://127.0.0.1:$SLUICE_WEBSOCKET_PORT/ws"

# What each client needs; a non-empty value says why it cannot run.
missing_python() {
  [ -x "$PY" ] || { echo "$PY not found"; return; }
  "$PY" -c "import $1" 2>/dev/null || echo "$PY cannot import $1 (apt-get install $2)"
}
missing_node() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "node and npm not found (Node 20 or later)"; return; }
  node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || { echo "node $(node --version) is older than 20"; return; }
  local dir=examples/node
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$TMP/npm-ci.log" 2>&1 ||
      { echo "npm ci in $dir failed: $(tail -3 "$TMP/npm-ci.log")"; return; }
  fi
}
NO_STOMP_PY=$(missing_python stomp python3-stomp)
NO_PROTON=$(missing_python proton python3-qpid-proton)
NO_PIKA=$(missing_python pika python3-pika)
echo "== npm ci in examples/node if needed"
NO_NODE=$(missing_node)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM
NO_BROWSER=$NO_NODE
[ -n "$NO_BROWSER" ] || [ -x "$CHROMIUM" ] || NO_BROWSER="$CHROMIUM not found (apt-get install chromium fonts-dejavu-core)"

declare -a SUMMARY
PASSED=0 FAILED=0 SKIPPED=0
row() { SUMMARY+=("$(printf '%-5s %-26s %-30s %s' "$@")"); }

# run NAME FEATURE MISSING COMMAND...: runs one example under the time limit.
run() {
  local name=$1 feature=$2 missing=$3 status=0 start ms secs
  shift 3
  echo
  echo "== $name ($feature)"
  if [ -n "$missing" ]; then
    if [ "$REQUIRE" = 1 ]; then
      echo "FAIL: $missing"
      FAILED=$((FAILED + 1)); row FAIL "$name" "$feature" "$missing"
    else
      echo "SKIP: $missing"
      SKIPPED=$((SKIPPED + 1)); row SKIP "$name" "$feature" "$missing"
    fi
    return
  fi
  start=$(date +%s%N)
  timeout -k 5 "$EXAMPLE_TIMEOUT" "$@" >"$TMP/$(basename "$name").log" 2>&1 || status=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  secs=$(printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100)))
  sed 's/^/    /' "$TMP/$(basename "$name").log"
  if [ "$status" = 0 ]; then
    PASSED=$((PASSED + 1)); row PASS "$name" "$feature" "$secs"
  else
    local why="exit status $status"
    [ "$status" = 124 ] && why="no result within ${EXAMPLE_TIMEOUT} s"
    echo "FAIL: $why"
    FAILED=$((FAILED + 1)); row FAIL "$name" "$feature" "$why"
  fi
}

run python/stomp_selector.py "stomp.py: selector" "$NO_STOMP_PY" "$PY" examples/python/stomp_selector.py
run python/proton_durable.py "Proton: durable subscription" "$NO_PROTON" "$PY" examples/python/proton_durable.py
run python/pika_redelivery.py "pika: redelivery limit, DLQ" "$NO_PIKA" "$PY" examples/python/pika_redelivery.py
run node/rhea_redelivery.mjs "rhea: redelivery limit, DLQ" "$NO_NODE" node examples/node/rhea_redelivery.mjs
run node/stompjs_delay.mjs "stompjs: time-to-deliver" "$NO_NODE" node examples/node/stompjs_delay.mjs
run browser/index.html "stompjs in Chromium: selector" "$NO_BROWSER" node examples/browser/run.mjs
run go/stomp-redelivery "go-stomp: NACK, DLQ" "" "$TMP/bin/stomp-redelivery"
run go/amqp-schedule "go-amqp: delivery schedule" "" "$TMP/bin/amqp-schedule"

echo
echo "== stop sluice"
if kill -0 "$BROKER_PID" 2>/dev/null; then
  status=0
  stop_broker || status=$?
  if [ "$status" = 0 ]; then
    echo "sluice stopped cleanly"
  else
    echo "FAIL: sluice exited with status $status on SIGTERM"
    FAILED=$((FAILED + 1)); row FAIL broker "clean shutdown" "exit status $status"
  fi
else
  echo "FAIL: sluice died while the examples ran"
  FAILED=$((FAILED + 1)); row FAIL broker "stays up" "it died while the examples ran"
fi
if [ "$FAILED" != 0 ]; then
  echo "-- sluice log (last 40 lines)"
  tail -40 "$TMP/sluice.log"
fi

echo
echo "== summary"
printf '%s\n' "${SUMMARY[@]}"
printf '%-5s %-26s %-30s %s\n' "-" java/QuickStart.java "Qpid JMS: durable, selector" "not run: needs Qpid JMS from Maven Central"
echo "examples: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" = 0 ]
