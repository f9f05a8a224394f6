#!/bin/bash
# sluice-report.sh [ARGS...]: regenerate docs/conformance/sluice.md and
# docs/conformance/sluice.html from a real run of the conformance suite
# against `sluice serve`, restarts included. Run it from anywhere in the
# repository; ARGS go to `sluice conformance` (e.g. --json /tmp/sluice.json).
#
# It builds the sluice binary of this checkout, starts it with
# conformance/scripts/restart-sluice.sh (the conformance profile's
# configuration, a fresh temporary data directory), runs every scenario over
# STOMP, AMQP 1.0, AMQP 0-9-1 and both directions across each pair with that
# script as --restart-cmd and the admin API, writes the reports, and stops
# the broker. The listeners are 127.0.0.1:61713 (STOMP), :5772 (AMQP 1.0 and
# 0-9-1, told apart by their protocol headers) and :8261 (admin), or
# SLUICE_CONFORMANCE_STOMP, _AMQP and _ADMIN when set.
# It exits with the status of `sluice conformance`: non-zero if a cell fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export SLUICE_CONFORMANCE_STOMP=${SLUICE_CONFORMANCE_STOMP:-127.0.0.1:61713}
export SLUICE_CONFORMANCE_AMQP=${SLUICE_CONFORMANCE_AMQP:-127.0.0.1:5772}
export SLUICE_CONFORMANCE_ADMIN=${SLUICE_CONFORMANCE_ADMIN:-127.0.0.1:8261}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance.XXXXXX")
stop() {
	if [ -f "$work/serve.pid" ]; then
		pid=$(cat "$work/serve.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	rm -rf "$work"
}
trap stop EXIT

go build -o "$work/sluice" ./cmd/sluice
conformance/scripts/restart-sluice.sh "$work" "$work/sluice"
listening() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
for i in $(seq 1 100); do
	if listening "$SLUICE_CONFORMANCE_STOMP" && listening "$SLUICE_CONFORMANCE_AMQP" && listening "$SLUICE_CONFORMANCE_ADMIN"; then
		break
	fi
	if [ "$i" = 100 ]; then
		echo "sluice-report.sh: sluice does not listen after 10s; its log:" >&2
		cat "$work/serve.log" >&2
		exit 1
	fi
	sleep 0.1
done

status=0
"$work/sluice" conformance \
	--stomp "$SLUICE_CONFORMANCE_STOMP" --amqp "$SLUICE_CONFORMANCE_AMQP" --amqp091 "$SLUICE_CONFORMANCE_AMQP" \
	--admin "$SLUICE_CONFORMANCE_ADMIN" --restart-cmd "conformance/scripts/restart-sluice.sh '$work' '$work/sluice'" \
	--note "Produced by conformance/scripts/sluice-report.sh: sluice serve --config conformance/profiles/sluice.toml (started and restarted by conformance/scripts/restart-sluice.sh, fresh data directory), then sluice conformance --stomp $SLUICE_CONFORMANCE_STOMP --amqp $SLUICE_CONFORMANCE_AMQP --amqp091 $SLUICE_CONFORMANCE_AMQP --admin $SLUICE_CONFORMANCE_ADMIN --restart-cmd 'conformance/scripts/restart-sluice.sh DIR sluice'." \
	--markdown docs/conformance/sluice.md --report docs/conformance/sluice.html "$@" || status=$?
exit "$status"
