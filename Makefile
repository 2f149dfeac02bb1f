# The README's two commands are `make quickstart` and `make test`.
GO ?= go

.PHONY: test quickstart build

test:
	bash scripts/test.sh

quickstart:
	$(GO) run ./cmd/feedworker run --config examples/quickstart.yaml

build:
	$(GO) build -trimpath -o bin/feedworker ./cmd/feedworker
