#!/bin/sh
# make dist: the release archives, one per platform, and their checksums,
# in dist/ (DIST to put them elsewhere):
#
#   dist/sluice-VERSION-linux-amd64.tar.gz    linux/arm64, darwin/amd64, darwin/arm64 likewise
#   dist/SHA256SUMS                           sha256sum -c SHA256SUMS checks them
#
# Each archive holds one directory, sluice-VERSION-OS-ARCH/, with the
# static binary (scripts/build.sh), README.md, LICENSE (when there is one),
# sluice.example.toml, the systemd unit and its sysusers.d file
# (packaging/), and the man pages (man/*.1). docs/install.md tells how to
# install them.
#
# VERSION defaults to git describe --tags --always --dirty, COMMIT to the
# HEAD commit, and the build date to SOURCE_DATE_EPOCH if set, else now;
# PLATFORMS (space-separated GOOS/GOARCH) to the four above. With GNU tar
# the archives' entries carry that date, root ownership and sorted names,
# so that the same inputs give the same archives.
set -eu
cd "$(dirname "$0")/.."

DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
VERSION=${VERSION:-$(git describe --tags --always --dirty)}
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
epoch=${SOURCE_DATE_EPOCH:-$(date +%s)}
# GNU date, then BSD date (macOS).
DATE=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$epoch" +%Y-%m-%dT%H:%M:%SZ)
export VERSION COMMIT DATE

tarflags=
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
	tarflags="--sort=name --owner=0 --group=0 --numeric-owner --mtime=@$epoch --mode=u+rwX,go+rX,go-w"
fi
if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$@"; }
else
	sha256() { shasum -a 256 "$@"; }
fi

rm -rf "$DIST"
mkdir -p "$DIST"
name_version=${VERSION#v}
for platform in $PLATFORMS; do
	os=${platform%/*}
	arch=${platform#*/}
	name=sluice-$name_version-$os-$arch
	stage=$DIST/$name
	echo "dist: $name.tar.gz"
	mkdir -p "$stage/man"
	GOOS=$os GOARCH=$arch scripts/build.sh "$stage/sluice"
	cp README.md sluice.example.toml packaging/sluice.service packaging/sluice.sysusers.conf "$stage/"
	if [ -f LICENSE ]; then cp LICENSE "$stage/"; fi
	cp man/*.1 "$stage/man/"
	# shellcheck disable=SC2086 # tarflags is a list of flags
	(cd "$DIST" && tar $tarflags -cf - "$name" | gzip -9n >"$name.tar.gz")
	rm -rf "$stage"
done
(cd "$DIST" && sha256 ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
echo "dist: SHA256SUMS"
cat "$DIST/SHA256SUMS"
