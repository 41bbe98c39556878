# harvestd and harvestctl as static binaries on a small Debian runtime.
#
#   docker build -t harvest:local .
#   docker run --rm harvest:local agent --help
#
# The base images are build args with the public images as defaults; on a
# machine without a registry, pass images made locally (docker compose passes
# HARVEST_GO_IMAGE and HARVEST_DEBIAN_IMAGE; scripts/compose-test.sh makes
# them from Debian's packages, see the README's Cluster section):
#
#   docker build --build-arg GO_IMAGE=... --build-arg DEBIAN_IMAGE=... -t harvest:local .
#
# The Go image needs go on its PATH and a way to the module proxy (the
# locally made one carries the host's CA bundle for that); the Debian image
# needs apt-get. No `# syntax=` line: the Dockerfile frontend
# built into the engine is used, so nothing is pulled to read this file.
# The cache mounts need BuildKit (Docker Engine 20.10 or later, as docker
# compose v2 builds).
#
# The runtime image has curl for health checks (GET /readyz) and runs as the
# non-root user harvest (uid 10001); node data lives in /var/lib/harvest/data
# (mount a volume there). See docker-compose.cluster.yml for a cluster.

ARG GO_IMAGE=golang:1.26-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/harvestd ./cmd/harvestd && \
    go build -trimpath -ldflags="-s -w" -o /out/harvestctl ./cmd/harvestctl

FROM ${DEBIAN_IMAGE}
RUN apt-get update && \
    apt-get install -y --no-install-recommends ca-certificates curl && \
    rm -rf /var/lib/apt/lists/* && \
    groupadd --system --gid 10001 harvest && \
    useradd --system --uid 10001 --gid harvest --home-dir /var/lib/harvest --shell /usr/sbin/nologin harvest && \
    mkdir -p /var/lib/harvest/data && chown -R harvest:harvest /var/lib/harvest
COPY --from=build /out/harvestd /out/harvestctl /usr/local/bin/
USER harvest:harvest
WORKDIR /var/lib/harvest
ENV HARVEST_DATA_DIR=/var/lib/harvest/data
# HTTP API, gossip (TCP and UDP), raft.
EXPOSE 7233/tcp 7946/tcp 7946/udp 8300/tcp
ENTRYPOINT ["harvestd"]
CMD ["--help"]
