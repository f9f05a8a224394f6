#!/usr/bin/env bash
# backlog-restart.sh: the bounded-memory run of docs/benchmarks.md. It
# starts a Sluice, fills one queue with COUNT persistent 1 KiB messages over
# STOMP (64 receipts in flight), SIGKILLs the broker, starts it again on the
# same data, times how long until it serves the queue, then drains it with
# one ACK per message, and prints the load generator's report: fill and
# drain rates, broker CPU, and RSS after the fill, after the restart and
# after the drain.
#
#   COUNT=2000000 scripts/backlog-restart.sh
set -euo pipefail
COUNT=${COUNT:-200000}
SLUICE=${SLUICE:-bin/sluice}
DATA=$(mktemp -d /tmp/sluice-backlog.XXXXXX)
PORT=${PORT:-64713}
ADMIN=${ADMIN:-64714}
trap 'kill -9 $(cat "$DATA/pid" 2>/dev/null) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$DATA"' EXIT

start() {
	"$SLUICE" serve --data "$DATA/store" --stomp 127.0.0.1:$PORT --amqp "" --websocket "" \
		--admin 127.0.0.1:$ADMIN >>"$DATA/serve.log" 2>&1 &
	echo $! >"$DATA/pid"
}
start
for _ in $(seq 100); do
	if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then break; fi
	sleep 0.1
done
# Run between fill and drain: kill, restart, wait until the queue is served
# with its depth (the admin API answers only once recovery is done).
cat >"$DATA/restart.sh" <<EOS
#!/usr/bin/env bash
set -eu
kill -9 \$SLUICE_BENCH_BROKER_PID
while kill -0 \$SLUICE_BENCH_BROKER_PID 2>/dev/null; do sleep 0.05; done
t0=\$(date +%s.%N)
$(declare -f start)
DATA=$DATA; SLUICE=$SLUICE; PORT=$PORT; ADMIN=$ADMIN
start
for _ in \$(seq 600); do
	if curl -fs "http://127.0.0.1:$ADMIN/api/destinations/queue/\$SLUICE_BENCH_QUEUE" 2>/dev/null | grep -q '"messages":$COUNT'; then
		break
	fi
	sleep 0.05
done
t1=\$(date +%s.%N)
echo "restart: the queue was served with its $COUNT messages \$(echo "\$t1 - \$t0" | bc) s after the new process started" >&2
cat "$DATA/pid"
EOS
chmod +x "$DATA/restart.sh"
"$SLUICE" bench stomp --addr 127.0.0.1:$PORT --client lean --scenario backlog --count "$COUNT" \
	--ack client-individual --broker-pid "$(cat "$DATA/pid")" --after-fill "$DATA/restart.sh" --drain-timeout 60s "$@"
grep -E "store recovered" "$DATA/serve.log" | tail -1 >&2 || true
