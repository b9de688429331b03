# Every target is one line and calls go. `make run` and `make test` are the two that matter.
GO ?= go

.PHONY: run test test-short build lint bench temporal-cli up down

run: ## the whole stack on this machine (flags: make run ARGS="--temporal-port 17233 --ui-port 18233")
	$(GO) run ./cmd/chorus dev $(ARGS)

test: temporal-cli ## every test; PostgreSQL suites run when CHORUS_TEST_PG_DSN is set
	CHORUS_TEMPORAL_BIN="$$($(GO) -C tools tool -n temporal)" $(GO) test -count=1 -timeout 25m ./...

test-short: ## unit tests only (no Temporal server, no PostgreSQL)
	$(GO) test -short ./...

build: ## bin/chorus
	$(GO) build -o bin/chorus ./cmd/chorus

lint: ## vet and the Temporal workflow determinism check
	$(GO) vet ./... && $(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...

bench: ## benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

temporal-cli: ## build (first time: a few minutes) the Temporal CLI pinned in tools/
	$(GO) -C tools tool -n temporal >/dev/null

up: ## production-like stack with Docker Compose (needs Docker)
	docker compose up -d --build

down:
	docker compose down
