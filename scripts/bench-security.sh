#!/bin/bash
# What authorization costs: non-persistent STOMP queue throughput of two
# `sluice serve` processes side by side in one run, one with security off and
# one with a user whose role has 100 grants (the one that matches the
# benchmark's queues is the last, so a decision scans all 100 before the
# connection's decision cache holds it). ROUNDS rounds of off, on in turn
# (A B A B ...), each `sluice bench stomp --count COUNT` with the lean client;
# prints each side's median msg/s and broker CPU per 100k deliveries, and
# the on/off ratios pair by pair.
#
# Knobs (environment): ROUNDS (8), COUNT (200000), CLIENT (lean), OUT
# (directory for configs, data and reports; default a new one under /tmp).
# Needs Go and /usr/bin/python3 (for the summary).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-8}
COUNT=${COUNT:-200000}
CLIENT=${CLIENT:-lean}
OUT=${OUT:-$(mktemp -d /tmp/sluice-bench-security.XXXXXX)}
mkdir -p "$OUT"
BIN=$OUT/sluice
(cd "$REPO" && go build -o "$BIN" ./cmd/sluice)

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
OFF_PORT=$(free_port)
ON_PORT=$(free_port)
# bcrypt of "bench-pw".
HASH=$(printf 'bench-pw\n' | "$BIN" admin hash-password)

cat >"$OUT/off.toml" <<TOML
data = "$OUT/data-off"
log_level = "warn"
[listeners]
stomp = "127.0.0.1:$OFF_PORT"
amqp = ""
admin = ""
websocket = ""
TOML
{
  printf 'data = "%s"\nlog_level = "warn"\n[listeners]\nstomp = "127.0.0.1:%s"\namqp = ""\nadmin = ""\nwebsocket = ""\n\n' "$OUT/data-on" "$ON_PORT"
  printf '[[security.users]]\nname = "bench"\npassword_hash = "%s"\nroles = ["r"]\n\n' "$HASH"
  for i in $(seq 0 98); do
    printf '[[security.grants]]\nrole = "r"\nkind = "queue"\nmatch = "app%s.*"\nactions = ["send", "consume", "create"]\n\n' "$i"
  done
  printf '[[security.grants]]\nrole = "r"\nmatch = "sluicebench*"\nactions = ["*"]\n'
} >"$OUT/on.toml"

"$BIN" serve --config "$OUT/off.toml" >"$OUT/off.log" 2>&1 &
OFF_PID=$!
"$BIN" serve --config "$OUT/on.toml" >"$OUT/on.log" 2>&1 &
ON_PID=$!
trap 'kill $OFF_PID $ON_PID 2>/dev/null; wait 2>/dev/null || true' EXIT
for port in "$OFF_PORT" "$ON_PORT"; do
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
done

run() { # run VARIANT ROUND
  local port=$OFF_PORT pid=$OFF_PID cred=()
  if [ "$1" = on ]; then port=$ON_PORT pid=$ON_PID cred=(--login bench --passcode bench-pw); fi
  "$BIN" bench stomp --addr "127.0.0.1:$port" "${cred[@]}" --count "$COUNT" --client "$CLIENT" \
    --broker-pid "$pid" --json >"$OUT/r-$1-$2.json"
}
run off 0 && run on 0 # warm-up, not counted
for r in $(seq "$ROUNDS"); do run off "$r"; run on "$r"; done

/usr/bin/python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics as st, sys
out, rounds = sys.argv[1], int(sys.argv[2])
res = {}
for v in ("off", "on"):
    ds = [json.load(open(f"{out}/r-{v}-{r}.json")) for r in range(1, rounds + 1)]
    bad = [d for d in ds if not d["ok"]]
    if bad:
        sys.exit(f"{v}: {len(bad)} runs lost or duplicated messages")
    res[v] = ([d["message_rate"] for d in ds], [d["broker_cpu_seconds_per_100k"] for d in ds])
    r, c = res[v]
    print(f"{v:4} median {st.median(r):9.0f} msg/s (min {min(r):.0f}, max {max(r):.0f}); broker CPU {st.median(c):.3f} s per 100k")
tr = [a / b for a, b in zip(res["on"][0], res["off"][0])]
cr = [a / b for a, b in zip(res["on"][1], res["off"][1])]
print(f"on/off throughput, pair by pair: median {st.median(tr):.3f} ({' '.join(f'{x:.2f}' for x in tr)})")
print(f"on/off broker CPU per message, pair by pair: median {st.median(cr):.3f}")
PY
echo "reports in $OUT"
