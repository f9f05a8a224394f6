#!/bin/sh
# restart-sluice.sh DIR [SLUICE]: start, or restart, `sluice serve` with the
# conformance profile's configuration and its data in DIR/data, for
# `sluice conformance --restart-cmd`. SLUICE is the sluice binary (default:
# sluice on PATH).
#
# The listener addresses come from the environment `sluice conformance`
# gives the command: SLUICE_CONFORMANCE_STOMP, SLUICE_CONFORMANCE_AMQP and
# SLUICE_CONFORMANCE_ADMIN (export them yourself for the first start; an
# empty one disables that listener). AMQP 0-9-1 is served on the AMQP port;
# a SLUICE_CONFORMANCE_AMQP091 other than SLUICE_CONFORMANCE_AMQP adds a
# 0-9-1 listener of its own there (SLUICE_AMQP091). The script stops the broker whose pid
# is in DIR/serve.pid and waits (at most 30s) until it has exited, since two
# brokers cannot share a data directory; then it starts the new one in the
# background, with its output appended to DIR/serve.log, writes its pid to
# DIR/serve.pid and exits. `sluice conformance` then waits for the listeners.
set -eu
dir=${1:?usage: restart-sluice.sh DIR [SLUICE]}
sluice=${2:-sluice}
config=$(cd "$(dirname "$0")/.." && pwd)/profiles/sluice.toml
pidfile=$dir/serve.pid
mkdir -p "$dir"
if [ -f "$pidfile" ]; then
	pid=$(cat "$pidfile")
	if kill "$pid" 2>/dev/null; then
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			if [ "$i" -gt 300 ]; then
				echo "restart-sluice.sh: sluice (pid $pid) did not stop within 30s" >&2
				exit 1
			fi
			sleep 0.1
		done
	fi
	rm -f "$pidfile"
fi
if [ -n "${SLUICE_CONFORMANCE_AMQP091:-}" ] && [ "$SLUICE_CONFORMANCE_AMQP091" != "${SLUICE_CONFORMANCE_AMQP:-}" ]; then
	export SLUICE_AMQP091="$SLUICE_CONFORMANCE_AMQP091"
fi
"$sluice" serve --config "$config" --data "$dir/data" \
	--stomp "${SLUICE_CONFORMANCE_STOMP:-}" --amqp "${SLUICE_CONFORMANCE_AMQP:-}" --admin "${SLUICE_CONFORMANCE_ADMIN:-}" --websocket "" \
	>>"$dir/serve.log" 2>&1 </dev/null &
echo $! >"$pidfile"
