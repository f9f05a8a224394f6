#!/bin/bash
# The bounded-memory comparison of docs/benchmarks.md, Sluice against
# ActiveMQ 5.17 and RabbitMQ 3.10 in one run (private peer instances, ports
# moved up by PEERS_PORT_OFFSET, started from ../shared/peers/scripts):
#
#  1. persistent: 1 KiB persistent messages, 64 confirmations in flight, one
#     consumer that acknowledges each message (STOMP client-individual; AMQP
#     1.0 accepted), ROUNDS rounds in turn. RabbitMQ's AMQP 1.0 consumer
#     runs pre-settled (its 3.10 plugin stalls acking consumers under a
#     backlog), so Sluice's runs both ways.
#  2. backlog: BACKLOG_COUNTS (200000) persistent 1 KiB messages filled with
#     no consumer, then drained with one ACK per message, each broker on a
#     fresh store; fill and drain rates and the broker's RSS.
#  3. slow: a STOMP subscriber that never reads while a producer sends
#     1.5 GiB (24,576 × 64 KiB, persistent and not) with receipts; the
#     broker's RSS growth, and how much was sent before a producer was held.
#
# It installs nothing: Go, jq, and Debian's activemq and rabbitmq-server.
# ActiveMQ confirms a persistent STOMP message per fsync (about 300 msg/s
# here), so its runs take AMQ_PERSISTENT_COUNT (5000) and AMQ_BACKLOG_COUNT
# (20000) messages; rates are comparable, totals are not.
# Knobs: ROUNDS (3), PERSISTENT_COUNT (30000), BACKLOG_COUNTS ("200000"),
# SLOW (1), SECTIONS ("persistent backlog slow"), PEERS_PORT_OFFSET (500),
# OUT (reports directory), RUN_TIMEOUT (600 s per run).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared/peers}
ROUNDS=${ROUNDS:-3}
PERSISTENT_COUNT=${PERSISTENT_COUNT:-30000}
BACKLOG_COUNTS=${BACKLOG_COUNTS:-200000}
AMQ_PERSISTENT_COUNT=${AMQ_PERSISTENT_COUNT:-5000}
AMQ_BACKLOG_COUNT=${AMQ_BACKLOG_COUNT:-20000}
SECTIONS=${SECTIONS:-"persistent backlog slow"}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-memory.XXXXXX)}
o=${PEERS_PORT_OFFSET:-500}
mkdir -p "$OUT/peers"

for p in $((62613 + o)) $((62616 + o)) $((63613 + o)) $((5673 + o)) $((25673 + o)); do
  if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "port $p is in use (try another PEERS_PORT_OFFSET)" >&2; exit 2; fi
done
cp -r "$SHARED/scripts" "$SHARED/config" "$OUT/peers/"
sed -i -e "s/62613/$((62613 + o))/g" -e "s/62616/$((62616 + o))/g" -e "s/6672/$((6672 + o))/g" -e "s/63613/$((63613 + o))/g" \
  -e "s/5673/$((5673 + o))/g" -e 's/baselinec@localhost/sluicemem@localhost/g' "$OUT"/peers/scripts/* "$OUT"/peers/config/*
PEERS="$OUT/peers/scripts"
export AMQ_DIR="$OUT/peers/amq" RMQ_DIR="$OUT/peers/rmq"
AMQ_STOMP=$((62613 + o)) RMQ_STOMP=$((63613 + o)) RMQ_AMQP=$((5673 + o))

SLUICE="$OUT/sluice"
SLUICE_PID=""
cleanup() {
  set +e
  [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null
  "$PEERS/amq-stop.sh" >/dev/null 2>&1
  "$PEERS/rmq-stop.sh" >/dev/null 2>&1
  rm -rf "$OUT/sluice-data"
  echo "reports kept in $OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$REPO" && go build -o "$SLUICE" ./cmd/sluice)

# start_sluice: a fresh Sluice on free ports; sets SLUICE_PID, S_STOMP, S_AMQP.
start_sluice() {
  [ -n "$SLUICE_PID" ] && { kill "$SLUICE_PID"; wait "$SLUICE_PID" 2>/dev/null || true; }
  rm -rf "$OUT/sluice-data"
  "$SLUICE" serve --data "$OUT/sluice-data" --stomp 127.0.0.1:0 --amqp 127.0.0.1:0 --admin "" --websocket "" 2> "$OUT/sluice.log" &
  SLUICE_PID=$!
  S_STOMP="" S_AMQP=""
  for _ in $(seq 100); do
    S_STOMP=$(sed -n 's/.*msg=listening protocol=stomp addr=\([0-9.:]*\).*/\1/p' "$OUT/sluice.log" | head -1)
    S_AMQP=$(sed -n 's/.*msg=listening protocol=amqp addr=\([0-9.:]*\).*/\1/p' "$OUT/sluice.log" | head -1)
    [ -n "$S_STOMP" ] && [ -n "$S_AMQP" ] && return 0
    sleep 0.1
  done
  echo "sluice did not start"; cat "$OUT/sluice.log"; exit 1
}
start_peers() { # --fresh stores for each section
  "$PEERS/amq-stop.sh" >/dev/null 2>&1 || true
  "$PEERS/rmq-stop.sh" >/dev/null 2>&1 || true
  "$PEERS/amq-start.sh" --fresh >/dev/null
  "$PEERS/rmq-start.sh" --fresh >/dev/null
  AMQ_PID=$(cat "$AMQ_DIR/run/activemq.pid")
  RMQ_PID=$(cat "$RMQ_DIR/run/rabbitmq.pid")
}

# run LABEL ARGS...: one run; its JSON report appended to reports.json and
# a line printed.
run() {
  local label=$1; shift
  local tmp="$OUT/last.json" rc=0
  timeout "$RUN_TIMEOUT" "$SLUICE" bench "$@" --label "$label" --json > "$tmp" 2> "$OUT/last.err" || rc=$?
  if [ -s "$tmp" ]; then
    cat "$tmp" >> "$OUT/reports.json"
    jq -r --arg l "$label" '"  \($l): \(.options.scenario) \(.protocol) ack \(.options.ack_mode) — \(.message_rate|floor) msg/s end to end" +
      (if .backlog then ", fill \(.backlog.fill_rate|floor), drain \(.backlog.drain_rate|floor) msg/s, RSS after fill \((.backlog.rss_after_fill_bytes // 0)/1048576|floor) MiB, after drain \((.backlog.rss_after_drain_bytes // 0)/1048576|floor) MiB" else "" end) +
      ", p99 \(.latency.p99_ms) ms, broker CPU \((.broker_cpu_seconds_per_100k // 0)*100|round/100) s/100k, ok \(.ok)"' "$tmp" 2>/dev/null || cat "$tmp"
  else
    echo "  $label: FAILED (exit $rc): $(tr '\n' ' ' < "$OUT/last.err" | cut -c1-300)"
  fi
}

echo "cpus: $(nproc); loadavg: $(cat /proc/loadavg)"
for section in $SECTIONS; do
  case $section in
  persistent)
    echo "== persistent, 64 confirmations in flight, acking consumer: $ROUNDS rounds of $PERSISTENT_COUNT"
    start_peers
    start_sluice
    for r in $(seq "$ROUNDS"); do
      echo " round $r (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
      common=(--scenario persistent --receipt-window 64 --ack client-individual --client lean)
      run sluice stomp "${common[@]}" --count "$PERSISTENT_COUNT" --addr "$S_STOMP" --broker-pid "$SLUICE_PID"
      run activemq stomp "${common[@]}" --count "$AMQ_PERSISTENT_COUNT" --addr 127.0.0.1:$AMQ_STOMP --broker-pid "$AMQ_PID"
      run rabbitmq stomp "${common[@]}" --count "$PERSISTENT_COUNT" --addr 127.0.0.1:$RMQ_STOMP --host / --login guest --passcode guest --broker-pid "$RMQ_PID"
      acommon=(--scenario persistent --count "$PERSISTENT_COUNT" --receipt-window 64 --client lean --prefetch 1000)
      run sluice amqp "${acommon[@]}" --ack client-individual --addr "$S_AMQP" --broker-pid "$SLUICE_PID"
      run sluice-presettled amqp "${acommon[@]}" --ack auto --addr "$S_AMQP" --broker-pid "$SLUICE_PID"
      run rabbitmq-presettled amqp "${acommon[@]}" --ack auto --addr 127.0.0.1:$RMQ_AMQP --user guest --password guest --address-style rabbitmq --broker-pid "$RMQ_PID"
    done
    ;;
  backlog)
    for n in $BACKLOG_COUNTS; do
      echo "== backlog of $n: fill, then drain with one ACK per message (fresh stores)"
      start_peers
      start_sluice
      common=(--scenario backlog --receipt-window 64 --ack client-individual --client lean --drain-timeout 60s)
      run sluice stomp "${common[@]}" --count "$n" --addr "$S_STOMP" --broker-pid "$SLUICE_PID"
      run activemq stomp "${common[@]}" --count "$(( n < AMQ_BACKLOG_COUNT ? n : AMQ_BACKLOG_COUNT ))" --addr 127.0.0.1:$AMQ_STOMP --broker-pid "$AMQ_PID"
      run rabbitmq stomp "${common[@]}" --count "$n" --addr 127.0.0.1:$RMQ_STOMP --host / --login guest --passcode guest --broker-pid "$RMQ_PID"
    done
    ;;
  slow)
    for mode in "" --persistent; do
      echo "== slow subscriber, 1.5 GiB ${mode:-non-persistent}"
      start_peers
      start_sluice
      for b in sluice activemq rabbitmq; do
        case $b in
        sluice) args=(--addr "$S_STOMP" --broker-pid "$SLUICE_PID") ;;
        activemq) args=(--addr 127.0.0.1:$AMQ_STOMP --broker-pid "$AMQ_PID") ;;
        rabbitmq) args=(--addr 127.0.0.1:$RMQ_STOMP --host / --login guest --passcode guest --broker-pid "$RMQ_PID") ;;
        esac
        echo "  $b:"
        timeout "$RUN_TIMEOUT" "$SLUICE" bench stomp --scenario slow --count 24576 --size 65536 $mode "${args[@]}" --drain-timeout 10s 2>&1 |
          grep -v '^time=' | sed 's/^/    /' || echo "    FAILED"
      done
    done
    ;;
  esac
done
echo "loadavg after: $(cat /proc/loadavg)"
