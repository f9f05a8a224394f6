#!/bin/bash
# Replicated against single-node persistent throughput (issue #17 item 6),
# in one run: two clusters of three nodes on one machine (the example's,
# examples/cluster, and a copy of it on other ports with
# consume_before_store off) and two single nodes beside them (at their
# defaults, and with consume_before_store off), runs in turn. Each run is
# `sluice bench stomp --client lean --scenario persistent` with 64 receipts
# in flight and a consumer acknowledging each message, against a
# cluster's leader or a single node. With consume_before_store on (the
# default), a message the consumer acknowledges within its hold is never
# written, in a cluster too (its producer is confirmed once the leader has
# verified that a majority still follows it); off, every message is
# written (replicated) before its producer hears back.
# Knobs: ROUNDS (3), COUNT (20000), OUT (reports directory),
# CLUSTER_GOMAXPROCS (the cluster nodes' GOMAXPROCS; empty, the default:
# the Go default, every core, as the single nodes run).
CLUSTER_GOMAXPROCS=${CLUSTER_GOMAXPROCS-}
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-20000}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-cluster.XXXXXX)}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }
for p in 61711 61712 61713 5711 5712 5713 8711 8712 8713 7711 7712 7713 \
  62711 62712 62713 5721 5722 5723 8721 8722 8723 7721 7722 7723; do
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

clusterenv() { # CMD...: run CMD with the cluster nodes' GOMAXPROCS (in place of the subshell that & makes, so that $! is CMD's)
  if [ -n "$CLUSTER_GOMAXPROCS" ]; then GOMAXPROCS=$CLUSTER_GOMAXPROCS exec "$@"; else exec "$@"; fi
}
for n in 1 2 3; do
  clusterenv "$SLUICE" serve --config "$REPO/examples/cluster/node$n.toml" --data "$OUT/data-n$n" 2> "$OUT/n$n.log" &
  PIDS+=($!)
  # The store-first cluster: the example on ports 10 above (stomp 6271N,
  # amqp 572N, admin 872N, raft 772N, websocket 1572N).
  { printf 'consume_before_store = false\n'
    sed -e 's/:6171\([1-3]\)/:6271\1/g' -e 's/:571\([1-3]\)/:572\1/g' \
        -e 's/:871\([1-3]\)/:872\1/g' -e 's/:771\([1-3]\)/:772\1/g' \
        -e 's/:1571\([1-3]\)/:1572\1/g' "$REPO/examples/cluster/node$n.toml"
  } > "$OUT/nocbs-node$n.toml"
  clusterenv "$SLUICE" serve --config "$OUT/nocbs-node$n.toml" --data "$OUT/data-nocbs-n$n" 2> "$OUT/nocbs-n$n.log" &
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
leader() { # ADMIN STOMP: the STOMP address (STOMP prefix, node digit) of the node whose /readyz (ADMIN prefix) says ready
  for _ in $(seq 200); do
    for n in 1 2 3; do
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1$n/readyz")" = 200 ]; then
        echo "127.0.0.1:$2$n"; return
      fi
    done
    sleep 0.1
  done
  echo "no leader within 20 s" >&2; exit 1
}
LEADER=$(leader 871 6171)
LEADER_NOCBS=$(leader 872 6271)
echo "cluster leaders on $LEADER (defaults) and $LEADER_NOCBS (consume_before_store off); single nodes on $S_DEF (defaults) and $S_NOCBS (consume_before_store off)"

run() { # LABEL ADDR
  local tmp="$OUT/last.json"
  if "$SLUICE" bench stomp --client lean --scenario persistent --count "$COUNT" --receipt-window 64 \
    --ack client-individual --addr "$2" --label "$1" --json > "$tmp" 2> "$OUT/last.err"; then
    jq -c --arg l "$1" '{label: $l, rate: .message_rate, p50: .latency.p50_ms, p99: .latency.p99_ms, ok}' "$tmp" | tee -a "$OUT/runs.json"
  else
    echo "  $1: FAILED: $(tr '\n' ' ' < "$OUT/last.err" | cut -c1-300)"
  fi
}
echo "cpus: $(nproc); loadavg: $(cat /proc/loadavg); cluster nodes' GOMAXPROCS: ${CLUSTER_GOMAXPROCS:-Go default}"
for r in $(seq "$ROUNDS"); do
  echo " round $r (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
  run cluster "$LEADER"
  run single "$S_DEF"
  run cluster-nocbs "$LEADER_NOCBS"
  run single-nocbs "$S_NOCBS"
done
echo "== medians (msg/s end to end, p99 ms); each cluster against the single node of the same setting"
jq -rs '
  def median: sort | if length == 0 then 0 elif length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  def rate($l): map(select(.label == $l) | .rate) | median;
  (group_by(.label) | .[] | "\(.[0].label): \(map(.rate) | median | floor) msg/s, p50 \(map(.p50) | median) ms, p99 \(map(.p99) | median) ms"),
  "cluster ÷ single (defaults): \((rate("cluster") / rate("single")) * 100 | round / 100)",
  "cluster-nocbs ÷ single-nocbs (consume_before_store off): \((rate("cluster-nocbs") / rate("single-nocbs")) * 100 | round / 100)"
' "$OUT/runs.json"
