#!/bin/bash
# The AMQP 0-9-1 comparison of docs/benchmarks.md: Sluice's 0-9-1 front-end
# (on its AMQP port, which tells 0-9-1 from 1.0 by the protocol header)
# against RabbitMQ 3.10's native 0-9-1, in one run, same client
# (`sluice bench amqp091 --client $CLIENT`: lean, the load generator's own
# 0-9-1 client, by default; amqp091-go costs more CPU per message than
# either broker on a small machine), same acking, runs in turn:
#
#  1. queue: non-persistent 1 KiB messages through the default exchange,
#     one producer without confirms, one no-ack consumer;
#  2. persistent: persistent 1 KiB messages, 64 confirms in flight, one
#     consumer acknowledging each message (prefetch 100);
#  3. fanout: FANOUT_COUNT messages through amq.topic to 50 subscribers,
#     each with its own exclusive queue;
#  4. backlog: BACKLOG_COUNT (200000) persistent messages filled with no
#     consumer (64 confirms in flight), then drained with one ack per
#     message, each broker on a fresh store.
#
# A private RabbitMQ (../shared/peers/scripts, ports moved up by
# PEERS_PORT_OFFSET) and a fresh Sluice. It installs nothing: Go, jq and
# Debian's rabbitmq-server. Knobs: CLIENT (lean, or amqp091-go), ROUNDS
# (3), QUEUE_COUNT (100000), PERSISTENT_COUNT (30000), FANOUT_COUNT (2000),
# BACKLOG_COUNT (200000), SECTIONS ("queue persistent fanout backlog"), PEERS_PORT_OFFSET (600), OUT
# (reports directory), RUN_TIMEOUT (600 s per run).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared/peers}
CLIENT=${CLIENT:-lean}
ROUNDS=${ROUNDS:-3}
QUEUE_COUNT=${QUEUE_COUNT:-100000}
PERSISTENT_COUNT=${PERSISTENT_COUNT:-30000}
FANOUT_COUNT=${FANOUT_COUNT:-2000}
BACKLOG_COUNT=${BACKLOG_COUNT:-200000}
SECTIONS=${SECTIONS:-"queue persistent fanout backlog"}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-amqp091.XXXXXX)}
o=${PEERS_PORT_OFFSET:-600}
mkdir -p "$OUT/peers"
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || { echo "rabbitmq-server is needed (apt-get install rabbitmq-server)" >&2; exit 2; }

for p in $((63613 + o)) $((5673 + o)) $((25673 + o)); do
  if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "port $p is in use (try another PEERS_PORT_OFFSET)" >&2; exit 2; fi
done
cp -r "$SHARED/scripts" "$SHARED/config" "$OUT/peers/"
sed -i -e "s/63613/$((63613 + o))/g" -e "s/5673/$((5673 + o))/g" -e 's/baselinec@localhost/sluice091@localhost/g' \
  "$OUT"/peers/scripts/* "$OUT"/peers/config/*
PEERS="$OUT/peers/scripts"
export RMQ_DIR="$OUT/peers/rmq"
RMQ_AMQP=$((5673 + o))

SLUICE="$OUT/sluice"
SLUICE_PID=""
cleanup() {
  set +e
  [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null
  "$PEERS/rmq-stop.sh" >/dev/null 2>&1
  rm -rf "$OUT/sluice-data"
  echo "reports kept in $OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$REPO" && go build -o "$SLUICE" ./cmd/sluice)

# start_sluice: a fresh Sluice on a free AMQP port; sets SLUICE_PID, S_AMQP.
start_sluice() {
  [ -n "$SLUICE_PID" ] && { kill "$SLUICE_PID"; wait "$SLUICE_PID" 2>/dev/null || true; }
  rm -rf "$OUT/sluice-data"
  "$SLUICE" serve --data "$OUT/sluice-data" --stomp "" --amqp 127.0.0.1:0 --admin "" --websocket "" 2> "$OUT/sluice.log" &
  SLUICE_PID=$!
  S_AMQP=""
  for _ in $(seq 100); do
    S_AMQP=$(sed -n 's/.*msg=listening protocol=amqp addr=\([0-9.:]*\).*/\1/p' "$OUT/sluice.log" | head -1)
    [ -n "$S_AMQP" ] && return 0
    sleep 0.1
  done
  echo "sluice did not start"; cat "$OUT/sluice.log"; exit 1
}
start_rabbitmq() { # a fresh store
  "$PEERS/rmq-stop.sh" >/dev/null 2>&1 || true
  "$PEERS/rmq-start.sh" --fresh >/dev/null
  RMQ_PID=$(cat "$RMQ_DIR/run/rabbitmq.pid")
}

# run LABEL ARGS...: one run of sluice bench amqp091; its JSON report
# appended to reports.json and a line printed.
run() {
  local label=$1; shift
  local tmp="$OUT/last.json" rc=0
  timeout "$RUN_TIMEOUT" "$SLUICE" bench amqp091 --client "$CLIENT" "$@" --label "$label" --json > "$tmp" 2> "$OUT/last.err" || rc=$?
  if [ -s "$tmp" ]; then
    jq -c --arg s "$SECTION" '. + {section: $s}' "$tmp" >> "$OUT/reports.json"
    jq -r --arg l "$label" '"  \($l): \(.options.scenario) — \(.message_rate|floor) msg/s end to end" +
      (if .backlog then ", fill \(.backlog.fill_rate|floor), drain \(.backlog.drain_rate|floor) msg/s" else "" end) +
      ", p50 \(.latency.p50_ms) ms, p99 \(.latency.p99_ms) ms, broker CPU \((.broker_cpu_seconds_per_100k // 0)*100|round/100) s/100k, client CPU \(if .sent > 0 then (.client_cpu_seconds / .sent * 100000 * 100 | round / 100) else "-" end) s/100k sent, ok \(.ok)"' "$tmp" 2>/dev/null || cat "$tmp"
  else
    echo "  $label: FAILED (exit $rc): $(tr '\n' ' ' < "$OUT/last.err" | cut -c1-300)"
  fi
}

both() { # ARGS...: one run on each broker, Sluice first
  run sluice "$@" --addr "$S_AMQP" --broker-pid "$SLUICE_PID"
  run rabbitmq "$@" --addr 127.0.0.1:$RMQ_AMQP --broker-pid "$RMQ_PID"
}

echo "client: $CLIENT; cpus: $(nproc); loadavg: $(cat /proc/loadavg)"
for SECTION in $SECTIONS; do
  case $SECTION in
  queue | persistent | fanout)
    echo "== $SECTION: $ROUNDS rounds"
    start_rabbitmq
    start_sluice
    for r in $(seq "$ROUNDS"); do
      echo " round $r (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
      case $SECTION in
      queue) both --scenario queue --count "$QUEUE_COUNT" --ack auto ;;
      persistent) both --scenario persistent --count "$PERSISTENT_COUNT" --receipt-window 64 --ack client-individual --prefetch 100 ;;
      fanout) both --scenario fanout --count "$FANOUT_COUNT" --consumers 50 --ack auto ;;
      esac
    done
    ;;
  backlog)
    echo "== backlog of $BACKLOG_COUNT: fill, then drain with one ack per message (fresh stores)"
    start_rabbitmq
    start_sluice
    both --scenario backlog --count "$BACKLOG_COUNT" --receipt-window 64 --ack client-individual --prefetch 100 --drain-timeout 60s
    ;;
  esac
done
echo "loadavg after: $(cat /proc/loadavg)"

echo "== medians (msg/s end to end; fanout: messages each delivered to every subscriber) and Sluice ÷ RabbitMQ"
jq -rs '
  def median: sort | if length == 0 then 0 elif length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  group_by(.section) | .[] | . as $runs |
  ($runs | map(select(.label == "sluice") | .message_rate) | median) as $s |
  ($runs | map(select(.label == "rabbitmq") | .message_rate) | median) as $r |
  "\($runs[0].section): Sluice \($s|floor), RabbitMQ \($r|floor), ratio \(if $r > 0 then ($s / $r * 100 | round / 100) else "-" end)"
' "$OUT/reports.json"
