#!/bin/bash
# Side-by-side benchmark of Sluice against the peer brokers, in one run:
# ActiveMQ Classic 5.17 (STOMP 62613) and RabbitMQ 3.10 (STOMP 63613, AMQP 1.0
# on 5673), started with ../shared/peers/scripts, and `sluice serve` on free
# ports with a temporary data directory.
#
# For each scenario (queue, persistent, fanout) it makes one unrecorded
# warm-up run per broker, then ROUNDS rounds of Sluice, ActiveMQ, RabbitMQ in
# turn (A B C A B C ...), and prints the medians, the ratio Sluice / better
# peer against issue 4's bar, and each broker's CPU seconds per 100k
# deliveries (from /proc/PID/stat over the measured part of each run).
# Then the same for AMQP 1.0 (queue and persistent), Sluice against RabbitMQ's
# AMQP 1.0 plugin (Debian's activemq has no AMQP transport).
#
# It installs nothing: it needs Go, and Debian's activemq and rabbitmq-server
# packages (apt-get install -y activemq rabbitmq-server).
#
# Knobs (environment): ROUNDS (3), SCENARIOS ("queue persistent fanout"),
# QUEUE_COUNT (50000), PERSISTENT_COUNT (3000), FANOUT_COUNT (2000, times 50
# subscribers), AMQP (1: also AMQP 1.0, Sluice and RabbitMQ), AMQP_COUNT (30000),
# CLIENTS ("go-stomp lean": the STOMP clients, see `sluice bench stomp --help`;
# go-stomp's own CPU cost caps what it can measure on a small machine),
# AMQP_CLIENTS ("go-amqp lean": the AMQP 1.0 clients, see `sluice bench amqp
# --help`; go-amqp likewise caps the persistent scenario),
# AMQP_PERSISTENT_WINDOWS ("1000 1": the confirmation windows of the AMQP
# persistent runs, each its own row in the summary),
# PEERS_PRIVATE (0: the shared instances on their usual ports; 1: private
# copies of the peer scripts and configs under OUT, every port moved up by
# PEERS_PORT_OFFSET (100) and RabbitMQ node name sluicebench, so that another
# session starting or stopping the shared instances cannot disturb the run),
# PACED (0; 1: also the paced-latency section: persistent messages at a
# fixed PACED_RATE (2000 msg/s), PACED_COUNT (20000) of them, PACED_WINDOW
# (64) confirmations in flight, with PACED_CLIENTS ("lean"), against Sluice
# and RabbitMQ in turn, compared on p99: over STOMP both consumers send one
# ACK per message; over AMQP 1.0 RabbitMQ's consumer takes pre-settled
# deliveries (its 3.10 plugin's credit bug stalls accepting ones) and
# Sluice's runs both ways, accepting each message and pre-settled; for
# that section alone: PACED=1 SCENARIOS=" " AMQP=0),
# SLUICE_CONFIG (a TOML file for `sluice serve --config`, e.g. one with
# consume_before_store = false), RUN_TIMEOUT (300 s per run), OUT (directory for the reports; default a new
# one under /tmp), EXTRA (more `sluice bench` flags for every run).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${PEERS:-$REPO/../shared/peers/scripts}
ROUNDS=${ROUNDS:-3}
SCENARIOS=${SCENARIOS:-"queue persistent fanout"}
QUEUE_COUNT=${QUEUE_COUNT:-50000}
PERSISTENT_COUNT=${PERSISTENT_COUNT:-3000}
FANOUT_COUNT=${FANOUT_COUNT:-2000}
AMQP=${AMQP:-1}
AMQP_COUNT=${AMQP_COUNT:-30000}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
CLIENTS=${CLIENTS:-"go-stomp lean"}
AMQP_CLIENTS=${AMQP_CLIENTS:-"go-amqp lean"}
AMQP_PERSISTENT_WINDOWS=${AMQP_PERSISTENT_WINDOWS:-"1000 1"}
PACED=${PACED:-0}
PACED_RATE=${PACED_RATE:-2000}
PACED_COUNT=${PACED_COUNT:-20000}
PACED_WINDOW=${PACED_WINDOW:-64}
PACED_CLIENTS=${PACED_CLIENTS:-lean}
SLUICE_CONFIG=${SLUICE_CONFIG:-}
EXTRA=${EXTRA:-}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-peers.XXXXXX)}
mkdir -p "$OUT"

PEERS_PRIVATE=${PEERS_PRIVATE:-0}
AMQ_STOMP=62613 RMQ_STOMP=63613 RMQ_AMQP=5673
if [ "$PEERS_PRIVATE" = 1 ]; then
  # The same scripts and configs (so the same JVM and Erlang settings), on
  # private ports and state directories.
  mkdir -p "$OUT/peers"
  cp -r "$PEERS/../scripts" "$PEERS/../config" "$OUT/peers/"
  o=${PEERS_PORT_OFFSET:-100}
  AMQ_STOMP=$((62613 + o)) RMQ_STOMP=$((63613 + o)) RMQ_AMQP=$((5673 + o))
  for p in $((62613 + o)) $((62616 + o)) $((63613 + o)) $((5673 + o)) $((25673 + o)); do
    if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "port $p is in use: cannot run private peers (try another PEERS_PORT_OFFSET)" >&2; exit 2; fi
  done
  sed -i -e "s/62613/$((62613 + o))/g" -e "s/62616/$((62616 + o))/g" -e "s/6672/$((6672 + o))/g" -e "s/63613/$((63613 + o))/g" -e "s/5673/$((5673 + o))/g" \
    -e 's/baselinec@localhost/sluicebench@localhost/g' "$OUT"/peers/scripts/* "$OUT"/peers/config/*
  PEERS="$OUT/peers/scripts"
  AMQ_DIR="$OUT/peers/amq"
  RMQ_DIR="$OUT/peers/rmq"
fi
AMQ_DIR=${AMQ_DIR:-/tmp/peers/amq}
RMQ_DIR=${RMQ_DIR:-/tmp/peers/rmq}
export AMQ_DIR RMQ_DIR

missing=""
[ -f /usr/share/activemq/bin/activemq.jar ] || missing="$missing activemq"
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing="$missing rabbitmq-server"
command -v go >/dev/null || missing="$missing go"
if [ -n "$missing" ]; then
  echo "missing:$missing (this script installs nothing; e.g. apt-get install -y activemq rabbitmq-server)" >&2
  exit 2
fi
[ -d "$PEERS" ] || { echo "no peer scripts in $PEERS" >&2; exit 2; }

SLUICE="$OUT/sluice"
SLUICE_PID=""
STARTED_AMQ=0
STARTED_RMQ=0

cleanup() {
  set +e
  if [ -n "$SLUICE_PID" ] && kill -0 "$SLUICE_PID" 2>/dev/null; then
    kill -TERM "$SLUICE_PID"
    for _ in $(seq 1 60); do kill -0 "$SLUICE_PID" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$SLUICE_PID" 2>/dev/null && kill -KILL "$SLUICE_PID"
    echo "sluice (pid $SLUICE_PID) stopped"
  fi
  rm -rf "$OUT/sluice-data"
  [ "$STARTED_AMQ" = 1 ] && "$PEERS/amq-stop.sh"
  [ "$STARTED_RMQ" = 1 ] && "$PEERS/rmq-stop.sh"
  echo "reports kept in $OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build"
(cd "$REPO" && go build -o "$SLUICE" ./cmd/sluice)

echo "== start the peers"
out=$("$PEERS/amq-start.sh" --fresh 2>&1) || { echo "$out"; exit 1; }
echo "$out"
case "$out" in *"already running"*) ;; *) STARTED_AMQ=1 ;; esac
out=$("$PEERS/rmq-start.sh" --fresh 2>&1) || { echo "$out"; exit 1; }
echo "$out"
case "$out" in *"already running"*) ;; *) STARTED_RMQ=1 ;; esac
AMQ_PID=$(cat "$AMQ_DIR/run/activemq.pid")
RMQ_PID=$(cat "$RMQ_DIR/run/rabbitmq.pid")

echo "== start sluice"
SLUICE_CONFIG_FLAGS=()
[ -n "$SLUICE_CONFIG" ] && SLUICE_CONFIG_FLAGS=(--config "$SLUICE_CONFIG")
"$SLUICE" serve "${SLUICE_CONFIG_FLAGS[@]}" --data "$OUT/sluice-data" --stomp 127.0.0.1:0 --amqp 127.0.0.1:0 --admin "" --websocket "" --log-level info 2> "$OUT/sluice.log" &
SLUICE_PID=$!
SLUICE_ADDR=""
for _ in $(seq 1 100); do
  SLUICE_ADDR=$(sed -n 's/.*msg=listening protocol=stomp addr=\([0-9.:]*\).*/\1/p' "$OUT/sluice.log" | head -1)
  [ -n "$SLUICE_ADDR" ] && break
  kill -0 "$SLUICE_PID" 2>/dev/null || { cat "$OUT/sluice.log"; exit 1; }
  sleep 0.1
done
[ -n "$SLUICE_ADDR" ] || { echo "sluice did not report its STOMP address"; cat "$OUT/sluice.log"; exit 1; }
SLUICE_AMQP=$(sed -n 's/.*msg=listening protocol=amqp addr=\([0-9.:]*\).*/\1/p' "$OUT/sluice.log" | head -1)
echo "sluice pid $SLUICE_PID, STOMP $SLUICE_ADDR, AMQP 1.0 ${SLUICE_AMQP:-none}"

# target LABEL: the address, pid and flags of a broker.
declare -A ADDR PID FLAGS
ADDR[sluice]=$SLUICE_ADDR;       PID[sluice]=$SLUICE_PID; FLAGS[sluice]=""
ADDR[activemq]=127.0.0.1:$AMQ_STOMP; PID[activemq]=$AMQ_PID;  FLAGS[activemq]=""
ADDR[rabbitmq]=127.0.0.1:$RMQ_STOMP; PID[rabbitmq]=$RMQ_PID;  FLAGS[rabbitmq]="--host / --login guest --passcode guest"
BROKERS="sluice activemq rabbitmq"

count_of() {
  case "$1" in
    queue) echo "$QUEUE_COUNT" ;;
    persistent) echo "$PERSISTENT_COUNT" ;;
    fanout) echo "$FANOUT_COUNT" ;;
  esac
}

FAILS=0
# check_peers: the peers must still be the processes we measure.
check_peers() {
  local ok=1
  kill -0 "$AMQ_PID" 2>/dev/null || { echo "  !! activemq (pid $AMQ_PID) is gone: someone stopped it" >&2; ok=0; }
  kill -0 "$RMQ_PID" 2>/dev/null || { echo "  !! rabbitmq (pid $RMQ_PID) is gone: someone stopped it" >&2; ok=0; }
  [ "$ok" = 1 ]
}
# run FILE PROTOCOL LABEL SCENARIO COUNT FLAGS...: one bounded run, its JSON
# report appended to FILE.
run() {
  local file=$1 proto=$2 label=$3 scenario=$4 count=$5; shift 5
  local tmp="$OUT/last.json" rc=0
  # shellcheck disable=SC2086
  timeout "$RUN_TIMEOUT" "$SLUICE" bench "$proto" --scenario "$scenario" --count "$count" --label "$label" --json "$@" $EXTRA > "$tmp" 2> "$OUT/last.err" || rc=$?
  if [ -s "$tmp" ]; then
    cat "$tmp" >> "$file"
    printf '  %-10s %-10s %-10s %s\n' "$scenario" "$(jq -r .protocol "$tmp" 2>/dev/null)" "$label" \
      "$(jq -r '"\(.message_rate|floor) msg/s, \(.delivery_rate|floor) deliveries/s, p50 \(.latency.p50_ms) ms, p99 \(.latency.p99_ms) ms, p99.9 \(.latency.p999_ms) ms, broker CPU \((.broker_cpu_seconds_per_100k // 0)*100|round/100) s/100k, ok \(.ok)"' "$tmp" 2>/dev/null || echo "see $tmp")"
  else
    printf '  %-10s %-6s %-10s FAILED (exit %s): %s\n' "$scenario" "$proto" "$label" "$rc" "$(tr '\n' ' ' < "$OUT/last.err")"
  fi
  [ "$rc" = 0 ] || FAILS=$((FAILS + 1))
  return 0
}

stomp_run() { # FILE LABEL SCENARIO COUNT CLIENT
  local label=$2
  # shellcheck disable=SC2086
  run "$1" stomp "$label" "$3" "$4" --client "$5" --addr "${ADDR[$label]}" --broker-pid "${PID[$label]}" ${FLAGS[$label]}
}

echo "== machine"
echo "cpus: $(nproc); loadavg: $(cat /proc/loadavg)"
echo "busiest processes:"; ps -eo pcpu,pid,comm --sort=-pcpu | head -6
echo "loadavg before: $(cat /proc/loadavg)" > "$OUT/machine.txt"

for scenario in $SCENARIOS; do
  count=$(count_of "$scenario")
  for client in $CLIENTS; do
    echo "== $scenario, $client client: warm-up (not recorded), then $ROUNDS rounds of $count messages"
    for b in $BROKERS; do stomp_run "$OUT/warmup.json" "$b" "$scenario" $(( (count + 4) / 5 )) "$client"; done
    for r in $(seq 1 "$ROUNDS"); do
      echo " round $r  (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
      check_peers || echo "  !! results of this round are suspect (use PEERS_PRIVATE=1)"
      for b in $BROKERS; do stomp_run "$OUT/reports.json" "$b" "$scenario" "$count" "$client"; done
    done
  done
done

if [ "$AMQP" = 1 ]; then
  # RabbitMQ 3.10's AMQP 1.0 plugin stalls consumers that accept each
  # message (its credit bug), so consumers take pre-settled deliveries
  # (--ack auto) with a credit of 1000, on both brokers; producers send
  # unsettled, 1000 outstanding (queue), or durable with each window of
  # AMQP_PERSISTENT_WINDOWS (persistent: the broker settles each once
  # stored; window 1000 is issue 5's "unsettled with a credit window",
  # window 1 waits for each settlement before the next send).
  declare -A AFLAGS
  AFLAGS[sluice]="--addr ${SLUICE_AMQP:-none} --broker-pid $SLUICE_PID"
  AFLAGS[rabbitmq]="--addr 127.0.0.1:$RMQ_AMQP --user guest --password guest --address-style rabbitmq --broker-pid $RMQ_PID"
  ABROKERS="rabbitmq"
  [ -n "$SLUICE_AMQP" ] && ABROKERS="sluice rabbitmq"
  for variant in queue $(for w in $AMQP_PERSISTENT_WINDOWS; do echo "persistent:$w"; done); do
    scenario=${variant%%:*}
    count=$AMQP_COUNT
    wflags=()
    if [ "$scenario" = persistent ]; then
      w=${variant#*:}
      wflags=(--receipt-window "$w")
      # Window 1 is latency-bound: fewer messages keep the run short.
      [ "$w" = 1 ] && count=$PERSISTENT_COUNT
    fi
    for client in $AMQP_CLIENTS; do
      echo "== AMQP 1.0 $variant, $client client: warm-up (not recorded), then $ROUNDS rounds of $count messages"
      # shellcheck disable=SC2086
      for b in $ABROKERS; do run "$OUT/warmup.json" amqp "$b" "$scenario" $(( (count + 4) / 5 )) ${AFLAGS[$b]} --ack auto --prefetch 1000 --client "$client" "${wflags[@]}"; done
      for r in $(seq 1 "$ROUNDS"); do
        echo " round $r  (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
        # shellcheck disable=SC2086
        for b in $ABROKERS; do run "$OUT/reports.json" amqp "$b" "$scenario" "$count" ${AFLAGS[$b]} --ack auto --prefetch 1000 --client "$client" "${wflags[@]}"; done
      done
    done
  done
fi

if [ "$PACED" = 1 ]; then
  # Light, steady load: the figure is the latency tail, not the rate.
  pflags=(--rate "$PACED_RATE" --receipt-window "$PACED_WINDOW" --prefetch 1000)
  paced_variants="stomp:sluice:client-individual stomp:rabbitmq:client-individual"
  if [ -n "$SLUICE_AMQP" ]; then
    paced_variants="$paced_variants amqp:sluice:client-individual amqp:sluice:auto"
  fi
  paced_variants="$paced_variants amqp:rabbitmq:auto"
  # paced_run FILE VARIANT CLIENT COUNT
  paced_run() {
    local proto b ack
    IFS=: read -r proto b ack <<< "$2"
    if [ "$proto" = stomp ]; then
      # shellcheck disable=SC2086
      run "$1" stomp "$b" persistent "$4" --client "$3" --addr "${ADDR[$b]}" --broker-pid "${PID[$b]}" ${FLAGS[$b]} --ack "$ack" "${pflags[@]}"
    else
      local af="--addr ${SLUICE_AMQP:-none} --broker-pid $SLUICE_PID"
      [ "$b" = rabbitmq ] && af="--addr 127.0.0.1:$RMQ_AMQP --user guest --password guest --address-style rabbitmq --broker-pid $RMQ_PID"
      # shellcheck disable=SC2086
      run "$1" amqp "$b" persistent "$4" $af --client "$3" --ack "$ack" "${pflags[@]}"
    fi
  }
  for client in $PACED_CLIENTS; do
    echo "== paced: persistent at $PACED_RATE msg/s, $PACED_WINDOW confirmations in flight, $client client: warm-up (not recorded), then $ROUNDS rounds of $PACED_COUNT messages"
    for v in $paced_variants; do paced_run "$OUT/warmup.json" "$v" "$client" $(( (PACED_COUNT + 4) / 5 )); done
    for r in $(seq 1 "$ROUNDS"); do
      echo " round $r  (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
      check_peers || echo "  !! results of this round are suspect (use PEERS_PRIVATE=1)"
      for v in $paced_variants; do paced_run "$OUT/reports.json" "$v" "$client" "$PACED_COUNT"; done
    done
  done
fi

echo "loadavg after: $(cat /proc/loadavg)" >> "$OUT/machine.txt"
echo "== summary (medians over $ROUNDS rounds; msg/s is end to end: sent, over the time until the last delivery)"
cat "$OUT/machine.txt"
"$SLUICE" bench summarize --baseline sluice "$OUT/reports.json" | tee "$OUT/summary.txt"
[ "$FAILS" = 0 ] || echo "$FAILS run(s) failed or did not verify: see above"
