#!/bin/bash
# Builds the container image from the Dockerfile and checks it as a user
# would: `sluice version` in the image prints the commit it was built from;
# the image's own configuration refuses to open the network without users;
# with a trial configuration mounted over it, /healthz answers on the
# published admin port, a STOMP client connects on the published STOMP
# port, and `stop` (SIGTERM) shuts the broker down cleanly. It also checks
# the image's user, volume and ports.
#
# It needs podman or docker with a working engine; without one it says so
# and exits 0 (skipped), and likewise when the builder image cannot be
# pulled, unless CONTAINER_SMOKE_REQUIRED=1, which turns both into failures.
#
# Knobs (environment):
#   ENGINE     podman or docker (default: podman if it works, else docker)
#   GO_IMAGE   the builder stage's base (default: the Dockerfile's); "host"
#              assembles one from this machine's Go toolchain (go env
#              GOROOT), module cache and busybox (Debian's busybox-static),
#              for machines that reach no container registry. Only the
#              builder's base differs then: the build steps and the
#              runtime image are the Dockerfile's.
#   PODMAN_RUNTIME  the OCI runtime podman uses (podman --runtime), e.g.
#              runc where crun cannot run containers (crun refuses a
#              cgroup v1 and v2 hybrid; runc copes)
#   IMAGE      tag to build (default: localhost/sluice:smoke)
#   KEEP_IMAGE 1 keeps the image (and a GO_IMAGE=host builder) afterwards
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/sluice:smoke}
REQUIRED=${CONTAINER_SMOKE_REQUIRED:-0}

log() { printf '== container-smoke: %s\n' "$*"; }
skip() {
	if [ "$REQUIRED" = 1 ]; then
		echo "container-smoke: FAIL: $* (CONTAINER_SMOKE_REQUIRED=1)" >&2
		exit 1
	fi
	echo "container-smoke: SKIPPED: $*"
	exit 0
}
fail() {
	echo "container-smoke: FAIL: $*" >&2
	exit 1
}

# The engine.
if [ -z "${ENGINE:-}" ]; then
	if command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then
		ENGINE=podman
	elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
		ENGINE=docker
	else
		skip "no working container engine (podman, or docker with a running daemon)"
	fi
fi
command -v "$ENGINE" >/dev/null 2>&1 || fail "ENGINE=$ENGINE is not installed"
command -v curl >/dev/null 2>&1 || fail "curl is needed to ask the broker's /healthz"
engine=("$ENGINE")
if [ "$ENGINE" = podman ] && [ -n "${PODMAN_RUNTIME:-}" ]; then
	engine+=(--runtime "$PODMAN_RUNTIME")
fi
log "engine: $("$ENGINE" --version)"

# Limits. The engines raise RLIMIT_NOFILE and RLIMIT_NPROC in the container
# by default, which fails where the engine lacks CAP_SYS_RESOURCE (some CI
# sandboxes); lowering them needs no privilege and is plenty here.
run_limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

work=$(mktemp -d)
container=sluice-smoke-$$
volume=sluice-smoke-data-$$
cleanup() {
	"${engine[@]}" rm -f "$container" >/dev/null 2>&1 || true
	"${engine[@]}" volume rm -f "$volume" >/dev/null 2>&1 || true
	if [ "${KEEP_IMAGE:-0}" != 1 ]; then
		"${engine[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
		if [ -n "${host_go_image:-}" ]; then
			"${engine[@]}" rmi -f "$host_go_image" >/dev/null 2>&1 || true
		fi
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# The builder image.
build_args=()
if [ "${GO_IMAGE:-}" = host ]; then
	goroot=$(go env GOROOT)
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
		fail "GO_IMAGE=host needs a static busybox (apt-get install busybox-static)"
	GO_IMAGE=localhost/sluice-go-host:$(go env GOVERSION)
	host_go_image=$GO_IMAGE
	log "assembling the builder image $GO_IMAGE from $goroot and the module cache"
	root=$work/go-host
	mkdir -p "$root/bin" "$root/usr/local" "$root/etc/ssl/certs" "$root/usr/share" "$root/tmp" "$root/root" "$root/gomodproxy"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
	done
	cp -a "$goroot" "$root/usr/local/go"
	cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
	cp -R /usr/share/zoneinfo "$root/usr/share/"
	# go mod download here first, so that the module cache holds every
	# module; the builder reads it as a file proxy and needs no network.
	go mod download
	cp -a "$(go env GOMODCACHE)/cache/download/." "$root/gomodproxy/"
	chmod 1777 "$root/tmp"
	cat >"$work/Containerfile.go-host" <<-'CONTAINERFILE'
	FROM scratch
	COPY go-host/ /
	ENV PATH=/usr/local/go/bin:/bin HOME=/root GOTOOLCHAIN=local GOPROXY=file:///gomodproxy GOSUMDB=off
	CONTAINERFILE
	"${engine[@]}" build -q -f "$work/Containerfile.go-host" -t "$GO_IMAGE" "$work" >/dev/null
fi
if [ -n "${GO_IMAGE:-}" ]; then
	build_args+=(--build-arg "GO_IMAGE=$GO_IMAGE")
else
	GO_IMAGE=$(sed -n 's/^ARG GO_IMAGE=//p' Dockerfile)
fi
if ! "${engine[@]}" image inspect "$GO_IMAGE" >/dev/null 2>&1; then
	log "pulling the builder image $GO_IMAGE"
	"${engine[@]}" pull "$GO_IMAGE" >"$work/pull.log" 2>&1 ||
		skip "the builder image $GO_IMAGE cannot be pulled ($(tail -n 1 "$work/pull.log")); GO_IMAGE=host builds one from this machine's Go"
fi

# The image.
commit=$(git rev-parse HEAD)
version=$(git describe --tags --always --dirty)
log "building $IMAGE (version $version)"
if [ "$ENGINE" = podman ]; then
	# No cached layer images of the builder stage left behind.
	build_args+=(--layers=false)
fi
"${engine[@]}" build "${build_args[@]}" \
	--build-arg "VERSION=$version" --build-arg "COMMIT=$commit" \
	--build-arg "DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t "$IMAGE" . >"$work/build.log" 2>&1 ||
	{
		tail -n 30 "$work/build.log"
		hint=
		if grep -q 'cgroups in hybrid mode' "$work/build.log"; then hint=" (crun cannot run here: try PODMAN_RUNTIME=runc)"; fi
		fail "$ENGINE build$hint"
	}

# The image's metadata.
user=$("${engine[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")
[ "$user" = 65532:65532 ] || fail "the image runs as user '$user', want 65532:65532"
volumes=$("${engine[@]}" image inspect --format '{{json .Config.Volumes}}' "$IMAGE")
[[ $volumes == *'"/var/lib/sluice"'* ]] || fail "the image's volumes are $volumes, want /var/lib/sluice"
ports=$("${engine[@]}" image inspect --format '{{json .Config.ExposedPorts}}' "$IMAGE")
for p in 61613 61614 5672 5671 8161 15674; do
	[[ $ports == *"\"$p/tcp\""* ]] || fail "the image does not expose $p (it exposes $ports)"
done
log "user $user, volume /var/lib/sluice, ports $ports"

# sluice version: the commit and version given at build time.
out=$("${engine[@]}" run --rm "${run_limits[@]}" "$IMAGE" version) || fail "$ENGINE run $IMAGE version"
printf '%s\n' "$out"
grep -qx "commit: $commit" <<<"$out" || fail "sluice version in the image does not print commit $commit"
# A tag's version without its v, or (no tag) a -dev build at the commit.
grep -qx -e "sluice ${version#v}" -e "sluice [0-9.]*-dev+${version}" <<<"$out" ||
	fail "sluice version in the image does not print version $version"
served_version=$(sed -n 's/^sluice //p' <<<"$out")

# The image's own configuration: the broker refuses to open the network
# without users, and says what to do.
if out=$("${engine[@]}" run --rm "${run_limits[@]}" "$IMAGE" 2>&1); then
	fail "the broker started with the image's configuration, which has no users"
fi
grep -q "not a loopback address and no users are configured" <<<"$out" ||
	fail "the image's configuration was refused, but not for want of users: $out"
log "the shipped configuration is refused without users, as documented"

# A trial configuration: security off, allowed on the network, an admin token.
token_out=$("${engine[@]}" run --rm "${run_limits[@]}" "$IMAGE" admin new-token)
hash=$(sed -n 's/^config: tokens = \["\(sha256:[0-9a-f]*\)"\]$/\1/p' <<<"$token_out")
[ -n "$hash" ] || fail "sluice admin new-token printed no hash: $token_out"
sed -e 's/^allow_insecure_network = false$/allow_insecure_network = true/' \
	-e "s/^tokens = \[\]$/tokens = [\"$hash\"]/" packaging/container.toml >"$work/trial.toml"
chmod 644 "$work/trial.toml"
"${engine[@]}" volume create "$volume" >/dev/null
"${engine[@]}" run -d --name "$container" "${run_limits[@]}" \
	-v "$work/trial.toml:/etc/sluice/sluice.toml:ro" -v "$volume:/var/lib/sluice" \
	-p 127.0.0.1::8161 -p 127.0.0.1::61613 "$IMAGE" >/dev/null ||
	fail "$ENGINE run with the trial configuration"
# The host ports the engine picked.
port() { "${engine[@]}" port "$container" "$1/tcp" | head -n 1 | sed 's/.*://'; }
admin_port=$(port 8161)
stomp_port=$(port 61613)
[ -n "$admin_port" ] && [ -n "$stomp_port" ] || fail "$ENGINE port: no published ports"

healthz=
for _ in $(seq 1 100); do
	if healthz=$(curl -fsS --max-time 2 "http://127.0.0.1:$admin_port/healthz" 2>/dev/null); then
		break
	fi
	if [ "$("${engine[@]}" inspect --format '{{.State.Running}}' "$container")" != true ]; then
		"${engine[@]}" logs "$container" 2>&1 | tail -n 20
		fail "the broker exited"
	fi
	healthz=
	sleep 0.2
done
[ -n "$healthz" ] || { "${engine[@]}" logs "$container" 2>&1 | tail -n 20; fail "no answer from /healthz on 127.0.0.1:$admin_port"; }
log "/healthz: $healthz"
[[ $healthz == *'"status":"ok"'* && $healthz == *"\"version\":\"$served_version\""* ]] ||
	fail "/healthz answered $healthz, want status ok and version $served_version"

# A STOMP client connects on the published port, and the broker names the
# version `sluice version` printed.
exec 3<>"/dev/tcp/127.0.0.1/$stomp_port"
printf 'CONNECT\naccept-version:1.2\nhost:localhost\n\n\0' >&3
frame=()
while IFS= read -r -t 10 line <&3 && [ -n "$line" ]; do
	frame+=("$line")
done
exec 3<&- 3>&-
[ "${frame[0]:-}" = CONNECTED ] || fail "a STOMP CONNECT on 127.0.0.1:$stomp_port got '${frame[*]:-nothing}', want CONNECTED"
printf '%s\n' "${frame[@]}" | grep -qx "server:Sluice/$served_version" ||
	fail "CONNECTED has no server:Sluice/$served_version header: ${frame[*]}"
log "STOMP: ${frame[*]}"

# docker stop sends SIGTERM: a clean shutdown, exit status 0.
"${engine[@]}" stop -t 20 "$container" >/dev/null
status=$("${engine[@]}" inspect --format '{{.State.ExitCode}}' "$container")
[ "$status" = 0 ] || { "${engine[@]}" logs "$container" 2>&1 | tail -n 20; fail "the broker exited with status $status after stop"; }
"${engine[@]}" logs "$container" 2>&1 | grep -q "sluice stopped" || fail "the broker's log has no 'sluice stopped'"
"${engine[@]}" rm "$container" >/dev/null
log "stopped cleanly"
echo "container-smoke: 1 passed, 0 failed"
