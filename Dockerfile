# syntax=docker/dockerfile:1
#
# Multi-stage build of the feed worker: a static Go binary on a distroless base,
# running as the non-root user 65532.
#
#   docker build -t feedworker --build-arg VERSION=$(git describe --tags --always --dirty) .
#   docker run --rm -v $PWD/deploy/config.yaml:/etc/feedworker/config.yaml:ro feedworker
#
# The image has no shell and no curl: the container healthcheck (see
# docker-compose.yml) runs `/feedworker healthcheck --url http://127.0.0.1:9090/readyz`.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath

# Modules first, so that source edits do not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
# The version `feedworker --version` and feedworker_build_info report. The
# context has no .git (see .dockerignore), so go build cannot stamp a
# revision: pass it, as docker-compose.yml does from FEEDWORKER_VERSION.
# Empty, the binary says "dev".
ARG VERSION=
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w ${VERSION:+-X main.version=${VERSION}}" \
      -o /out/feedworker ./cmd/feedworker \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=
LABEL org.opencontainers.image.title="feedworker" \
      org.opencontainers.image.description="Polls RSS/Atom feeds and publishes their items to the Audience and Content Service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/feedworker/feedworker"

COPY --from=build /out/feedworker /feedworker
# Working directory for the embedded store (used only when redis.url is empty).
COPY --from=build --chown=65532:65532 /out/data /var/lib/feedworker
WORKDIR /var/lib/feedworker
USER 65532:65532

# Admin HTTP server: /metrics, /healthz, /readyz and the status page at /.
# The config must set admin.listen to 0.0.0.0:9090 inside a container.
EXPOSE 9090

ENTRYPOINT ["/feedworker"]
CMD ["run", "--config", "/etc/feedworker/config.yaml"]
