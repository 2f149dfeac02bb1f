# The README's two commands are `make quickstart` and `make test`.
GO ?= go
# The version the binary reports (feedworker --version, feedworker_build_info).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# quickstart and build compile with the same flags, so each reuses what the
# other left in Go's build cache. CGO_ENABLED=0 builds the static binary the
# Dockerfile ships: without cgo no libc is loaded into the worker (1.6 MB of
# its resident memory, docs/PERFORMANCE.md) and names resolve through Go's
# own resolver, as in the image.
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)"

.PHONY: test quickstart build

test:
	bash scripts/test.sh

# exec: the worker replaces the shell, so Ctrl-C reaches it alone and its
# clean exit is the recipe's; make then has nothing to report.
quickstart: build
	exec bin/feedworker run --config examples/quickstart.yaml

build:
	@echo "building bin/feedworker (the first build compiles every dependency: a minute or more)"
	$(GOBUILD) -o bin/feedworker ./cmd/feedworker
