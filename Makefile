# The README's two commands are `make quickstart` and `make test`.
GO ?= go

.PHONY: test quickstart vet fmt-check build

test: fmt-check vet
	$(GO) test -race -count=1 ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/feedworker ./cmd/feedworker
