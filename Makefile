GO ?= go
BIN := bin/plinth
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Builds that do not depend on the checkout's directory: a fresh clone
# reuses the build cache of an earlier one (go vet's and staticcheck's
# export data, the race-built test binaries), so only what changed is
# compiled again. Test results are never cached (-count=1).
export GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -trimpath)

.PHONY: help build run release test test-go test-sdk lint bench bench-scale bench-http bench-move bench-drain fmt

# The version plinth version and GET /v1/health (build) report: the
# nearest tag, the commits since it and -dirty for uncommitted changes,
# or the commit where no tag is reachable (make release VERSION=v1.2.3
# names it). Outside a git checkout it is empty, and the binary falls
# back to the version Go recorded.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
endif
LDFLAGS := -X main.version=$(VERSION)

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/plinth, its version from git describe
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/plinth

run: build ## start the server with embedded defaults (private Postgres, offline AI, demo key printed)
	./$(BIN) serve

# Static binaries (no cgo: they run on any Linux, distroless images
# included) without symbol tables, named plinth-VERSION-OS-ARCH, and
# their SHA256SUMS; under bin/, which git ignores (docs/production.md).
RELEASE_DIR ?= bin/release
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
RELEASE_BINS := $(foreach p,$(RELEASE_PLATFORMS),plinth-$(VERSION)-$(subst /,-,$(p)))
release: ## build static binaries for linux/amd64, linux/arm64 and darwin/arm64 and their SHA256SUMS into bin/release (VERSION=, RELEASE_DIR=, RELEASE_PLATFORMS=)
	@test -n "$(VERSION)" || { echo 'VERSION is empty (not a git checkout): make release VERSION=v1.2.3'; exit 1; }
	mkdir -p $(RELEASE_DIR)
	for p in $(RELEASE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
			-o $(RELEASE_DIR)/plinth-$(VERSION)-$${p%/*}-$${p#*/} ./cmd/plinth || exit 1; \
	done
	cd $(RELEASE_DIR) && sha256sum $(RELEASE_BINS) > SHA256SUMS

test: test-go test-sdk ## run every test: the Go tests, then the TypeScript SDK's

# One throwaway cluster for every test binary (cmd/testdb sets
# TEST_DATABASE_URL); go vet already ran in make lint, so go test's own
# vet pass is off. Four parallel tests a package (go test's default is
# one a core): many tests wait on a server, a window or a job for much of
# their time, and with two they held central's last minutes to two tests
# at once on an otherwise idle machine (docs/testing.md).
test-go: ## run every Go test against a real PostgreSQL, with the race detector
	$(GO) run ./cmd/testdb $(GO) test -race -count=1 -vet=off -parallel 4 -timeout 20m ./...

# The SDK's tests start a plinth built here with the race detector (the
# packages make test-go compiled, so only a link) with its private
# cluster; npm ci --prefix sdk/typescript installs their packages first
# (.ci/run does).
RACE_BIN := bin/plinth-race
test-sdk: ## build plinth with -race and test the TypeScript SDK (sdk/typescript) against it
	$(GO) build -race -o $(RACE_BIN) ./cmd/plinth
	PLINTH_BIN=$(CURDIR)/$(RACE_BIN) npm test --prefix sdk/typescript

# go vet and staticcheck type-check against export data that the go
# command compiles; with -race they compile exactly what make test
# builds (packages and their test variants), so a change is compiled once
# for the lint and the tests, not once plain and again with -race.
# staticcheck itself is built plain (into bin/) and runs under -race.
LINT_GOFLAGS := $(GOFLAGS) -race

lint: ## gofmt, go vet, staticcheck, go mod tidy -diff and the layering of the imports (staticcheck fetched through the Go module proxy on first use)
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	GOFLAGS='$(LINT_GOFLAGS)' $(GO) vet ./...
	GOBIN=$(CURDIR)/bin $(GO) install $(STATICCHECK)
	GOFLAGS='$(LINT_GOFLAGS)' ./bin/staticcheck ./...
	$(GO) mod tidy -diff
	$(GO) run ./cmd/layercheck -go $(GO)

bench: ## run the benchmarks (methods and figures: docs/performance.md)
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 3s -timeout 30m ./...

bench-move: ## move a project of 100,000 rows between two shards under 50 writes/s: the write pause, the time, rows/s (docs/performance.md)
	$(GO) run ./cmd/testdb $(GO) test -run '^$$' -bench BenchmarkMove -benchtime 2x -timeout 30m ./central

bench-drain: ## drain a shard of 1,000 demo-size projects to two others, 4 moves at a time: the time, projects/s, the longest pause (docs/performance.md)
	$(GO) run ./cmd/testdb $(GO) test -run '^$$' -bench BenchmarkDrain -benchtime 1x -timeout 60m ./central

N ?= 10000
bench-scale: build ## the cost of N idle projects on one shard (N=10000; docs/performance.md)
	$(GO) run ./cmd/benchscale -n $(N) -plinth $(BIN)

ROUNDS ?= 3
BASELINE ?=
bench-http: build ## Plinth against a bare net/http + pgx handler and PocketBase (BASELINE=an older plinth binary, PROFILE=a directory for CPU profiles; docs/performance.md)
	$(GO) run ./cmd/benchhttp -plinth $(BIN) -rounds $(ROUNDS) $(if $(BASELINE),-baseline $(BASELINE)) $(if $(PROFILE),-profile $(PROFILE))

fmt: ## format the code
	gofmt -w .
