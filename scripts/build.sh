#!/bin/sh
# Builds the release binary of sluice: a static executable (CGO_ENABLED=0),
# with -trimpath, without symbol tables (-s -w), and with the version, commit
# and build date set at link time (internal/buildinfo). It is the one place
# these flags are written: make dist (scripts/dist.sh), the Dockerfile and
# cmd/sluice's TestReleaseBuild all build with it.
#
#   scripts/build.sh OUT
#
# Environment: GOOS and GOARCH (the target; default this machine's), and
#   VERSION  default: git describe --tags --always --dirty
#   COMMIT   default: git rev-parse HEAD
#   DATE     default: SOURCE_DATE_EPOCH if set, else now; RFC 3339, UTC
# Without git (a container build, whose context has no .git) VERSION and
# COMMIT stay empty unless given, and the binary reports the release it
# leads up to with -dev (sluice version).
set -eu

out=${1:?usage: scripts/build.sh OUT}
case $out in
/*) ;;
*) out=$(pwd)/$out ;;
esac
cd "$(dirname "$0")/.."

if [ -z "${VERSION+set}" ]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || true)
fi
if [ -z "${COMMIT+set}" ]; then
	COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
fi
if [ -z "${DATE:-}" ]; then
	if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
		# GNU date, then BSD date (macOS).
		DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
			date -u -r "$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
	else
		DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	fi
fi

pkg=github.com/sluicemq/sluice/internal/buildinfo
CGO_ENABLED=0 exec go build -trimpath \
	-ldflags "-s -w -X $pkg.version=$VERSION -X $pkg.commit=$COMMIT -X $pkg.date=$DATE" \
	-o "$out" ./cmd/sluice
