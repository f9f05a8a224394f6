# Sluice's container image: a static sluice binary on an empty (scratch)
# base with CA certificates and time zones, run as a non-root user (65532),
# with the data directory as a volume. Build and run it as docs/install.md
# describes:
#
#   docker build -t sluice \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker run -v "$PWD/sluice.toml:/etc/sluice/sluice.toml:ro" -v sluice-data:/var/lib/sluice \
#     -p 61613:61613 -p 5672:5672 -p 8161:8161 sluice
#
# The configuration it starts with, /etc/sluice/sluice.toml, is
# packaging/container.toml: listeners on 0.0.0.0, which the broker allows
# only once users are configured; mount a copy with them over it.
# scripts/container-smoke.sh builds the image and checks it answers.

# The builder: any Go at least as new as go.mod's go line. The name is
# fully qualified, as podman wants without a search registry.
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Empty values leave the binary reporting the release with -dev
# (sluice version).
ARG VERSION=
ARG COMMIT=
ARG DATE=
# scripts/build.sh is the release build of make dist: CGO_ENABLED=0,
# -trimpath, the version, commit and date set at link time.
RUN VERSION="$VERSION" COMMIT="$COMMIT" DATE="$DATE" sh scripts/build.sh /rootfs/usr/bin/sluice
# The rest of the runtime's file system: CA certificates (for TLS to
# others), time zones (delivery schedules), the user and its group, the
# data directory owned by it, the configuration, a /tmp.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/usr/share /rootfs/etc/sluice /rootfs/var/lib/sluice /rootfs/tmp && \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ && \
    cp -R /usr/share/zoneinfo /rootfs/usr/share/ && \
    echo 'sluice:x:65532:65532:Sluice:/var/lib/sluice:/sbin/nologin' > /rootfs/etc/passwd && \
    echo 'sluice:x:65532:' > /rootfs/etc/group && \
    cp packaging/container.toml /rootfs/etc/sluice/sluice.toml && \
    chown -R 65532:65532 /rootfs/var/lib/sluice && \
    chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /var/lib/sluice
VOLUME /var/lib/sluice
# STOMP, STOMP over TLS, AMQP 1.0, AMQP 1.0 over TLS, admin HTTP. The TLS
# ports serve only when the configuration has TLS listeners.
EXPOSE 61613 61614 5672 5671 8161 15674
ENTRYPOINT ["/usr/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice/sluice.toml"]
