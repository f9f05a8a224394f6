#!/bin/bash
# Replicated against single-node persistent throughput (issue #17 item 6),
# in one run: the three nodes of examples/cluster (one machine, their own
# ports) and a single node beside them, runs in turn. Each run is
# `sluice bench stomp --client lean --scenario persistent` with 64 receipts
# in flight and a consumer acknowledging each message, against the
# cluster's leader or the single node. The single node runs twice: with
# consume_before_store off, as a cluster must, and at its defaults.
# Knobs: ROUNDS (3), COUNT (20000), OUT (reports directory).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-20000}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-cluster.XXXXXX)}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }
for p in 61711 61712 61713 5711 5712 5713 8711 8712 8713 7711 7712 7713; do
  if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "port $p is in use: the example cluster's ports must be free" >&2; exit 2; fi
done

SLUICE="$OUT/sluice"
PIDS=()
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$OUT"/data-*
  echo "reports kept in $OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
(cd "$REPO" && go build -o "$SLUICE" ./cmd/sluice)

for n in 1 2 3; do
  "$SLUICE" serve --config "$REPO/examples/cluster/node$n.toml" --data "$OUT/data-n$n" 2> "$OUT/n$n.log" &
  PIDS+=($!)
done
# Two single nodes on free ports: consume before store off, and defaults.
start_single() { # NAME FLAG
  "$SLUICE" serve --data "$OUT/data-$1" --stomp 127.0.0.1:0 --amqp "" --admin "" --websocket "" $2 2> "$OUT/$1.log" &
  PIDS+=($!)
}
printf 'consume_before_store = false\n' > "$OUT/nocbs.toml"
start_single single-nocbs "--config $OUT/nocbs.toml"
start_single single ""
addr_of() { # LOG: the STOMP address it listens on
  for _ in $(seq 100); do
    a=$(sed -n 's/.*msg=listening protocol=stomp addr=\([0-9.:]*\).*/\1/p' "$1" | head -1)
    [ -n "$a" ] && { echo "$a"; return; }
    sleep 0.1
  done
  echo "no STOMP listener in $1" >&2; exit 1
}
S_NOCBS=$(addr_of "$OUT/single-nocbs.log")
S_DEF=$(addr_of "$OUT/single.log")
leader() { # the STOMP address of the node whose /readyz says ready
  for _ in $(seq 200); do
    for n in 1 2 3; do
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:871$n/readyz")" = 200 ]; then
        echo "127.0.0.1:6171$n"; return
      fi
    done
    sleep 0.1
  done
  echo "no leader within 20 s" >&2; exit 1
}
LEADER=$(leader)
echo "cluster leader on $LEADER; single nodes on $S_NOCBS (consume_before_store off) and $S_DEF (defaults)"

run() { # LABEL ADDR
  local tmp="$OUT/last.json"
  if "$SLUICE" bench stomp --client lean --scenario persistent --count "$COUNT" --receipt-window 64 \
    --ack client-individual --addr "$2" --label "$1" --json > "$tmp" 2> "$OUT/last.err"; then
    jq -c --arg l "$1" '{label: $l, rate: .message_rate, p50: .latency.p50_ms, p99: .latency.p99_ms, ok}' "$tmp" | tee -a "$OUT/runs.json"
  else
    echo "  $1: FAILED: $(tr '\n' ' ' < "$OUT/last.err" | cut -c1-300)"
  fi
}
echo "cpus: $(nproc); loadavg: $(cat /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  echo " round $r (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
  run cluster "$LEADER"
  run single-nocbs "$S_NOCBS"
  run single "$S_DEF"
done
echo "== medians (msg/s end to end, p99 ms)"
jq -rs '
  def median: sort | if length == 0 then 0 elif length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  (map(select(.label == "cluster") | .rate) | median) as $c |
  group_by(.label) | .[] |
  "\(.[0].label): \(map(.rate) | median | floor) msg/s, p99 \(map(.p99) | median) ms, cluster ÷ this \(($c / (map(.rate) | median)) * 100 | round / 100)"
' "$OUT/runs.json"
