# syntax=docker/dockerfile:1
# harvestd and harvestctl as static binaries on a small Debian runtime.
#
#   docker build -t harvest:local .
#   docker run --rm harvest:local agent --help
#
# The runtime image has curl for health checks (GET /readyz) and runs as the
# non-root user harvest (uid 10001); node data lives in /var/lib/harvest/data
# (mount a volume there). See docker-compose.cluster.yml for a cluster.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/harvestd ./cmd/harvestd && \
    go build -trimpath -ldflags="-s -w" -o /out/harvestctl ./cmd/harvestctl

FROM debian:bookworm-slim
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
