GO ?= go
BIN := bin/plinth
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: help build run test lint bench bench-scale bench-http fmt

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/plinth
	$(GO) build -o $(BIN) ./cmd/plinth

run: build ## start the server with embedded defaults (private Postgres, offline AI, demo key printed)
	./$(BIN) serve

test: ## run every test against a real PostgreSQL, with the race detector
	$(GO) test -race -count=1 -timeout 20m ./...

lint: ## gofmt, go vet, staticcheck and go mod tidy -diff (staticcheck fetched through the Go module proxy on first use)
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

bench: ## run the benchmarks (methods and figures: docs/performance.md)
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 3s -timeout 30m ./...

N ?= 10000
bench-scale: build ## the cost of N idle projects on one shard (N=10000; docs/performance.md)
	$(GO) run ./cmd/benchscale -n $(N) -plinth $(BIN)

ROUNDS ?= 3
BASELINE ?=
bench-http: build ## Plinth against a bare net/http + pgx handler and PocketBase (BASELINE=an older plinth binary; docs/performance.md)
	$(GO) run ./cmd/benchhttp -plinth $(BIN) -rounds $(ROUNDS) $(if $(BASELINE),-baseline $(BASELINE))

fmt: ## format the code
	gofmt -w .
