# Every target is one line and calls go. `make run` and `make test` are the two that matter.
GO ?= go

.PHONY: run test test-short test-prod build lint bench bench-prod bench-go temporal temporal-cli record-upgrade-data screenshot screenshots up down

run: ## the whole stack on this machine (flags: make run ARGS="--ui --temporal-port 17233 --ui-port 18233")
	$(GO) run ./cmd/chorus dev $(ARGS)

test: temporal clients/node_modules/.package-lock.json ## every test; PostgreSQL suites run when CHORUS_TEST_PG_DSN is set
	CHORUS_TEMPORAL_SERVER_BIN="$$($(GO) -C tools/server tool -n go.temporal.io/server/cmd/server)" CHORUS_TEMPORAL_UI_BIN="$$($(GO) -C tools/ui tool -n chorus-temporal-ui)" $(GO) test -count=1 -parallel 16 -timeout 25m ./...

test-short: ## unit tests only (no Temporal server, no PostgreSQL)
	$(GO) test -short ./...

test-prod: ## the production topology (temporal-server on PostgreSQL, api + 2 workers) set up from deploy/ and driven through MCP; needs CHORUS_TEST_PG_DSN or CHORUS_PROD_PG_ADMIN_DSN (a superuser)
	./deploy/test-prod.sh

build: ## bin/chorus
	$(GO) build -o bin/chorus ./cmd/chorus

lint: ## vet and the Temporal workflow determinism check
	$(GO) vet ./... && $(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...

bench: temporal ## the model-facing bytes per preset and toolset, then a load test over MCP against bare-Temporal floors, own stack on free ports (flags: make bench ARGS="--agents 100 --read-tasks-large 100000"; ARGS=--surface prints only the bytes; named only: ARGS="--phases soak" (an hour of calls with pruning on), ARGS="--phases opscheck" (ops check passes at 100,000 tasks); see go run ./cmd/chorus bench --help)
	$(GO) run ./cmd/chorus bench $(ARGS)

bench-prod: ## make bench against the test-prod topology (temporal-server on PostgreSQL, api + 2 workers; same needs as test-prod; flags: make bench-prod ARGS="--agents 100")
	./deploy/test-prod.sh bench $(ARGS)

bench-go: ## the Go micro-benchmarks (go test -bench)
	$(GO) test -run '^$$' -bench . -benchmem ./...

# clients/package-lock.json has a hand-added entry for vite's optional, Windows-only
# napi-windows-process-start-time, which the registry does not serve: npm 11 leaves it out of the
# lock it writes and then refuses that lock in `npm ci` (npm/cli#9846). Keep it when re-locking.
clients/node_modules/.package-lock.json: clients/package.json clients/package-lock.json ## npm packages of the TypeScript client suite (clients/)
	@if command -v npm >/dev/null 2>&1; then npm --prefix clients ci --no-audit --no-fund; else echo "npm not found: clients/ not installed, so TestTypeScriptClients skips (under CI=true it fails); install Node 20+ and npm"; fi

temporal: ## build (first time: a few minutes) temporal-server and temporal-sql-tool (tools/server) and the Temporal web UI (tools/ui)
	$(GO) -C tools/server tool -n go.temporal.io/server/cmd/server >/dev/null && $(GO) -C tools/server tool -n go.temporal.io/server/cmd/tools/sql >/dev/null && $(GO) -C tools/ui tool -n chorus-temporal-ui >/dev/null

temporal-cli: ## build (first time: a few minutes) the Temporal CLI pinned in tools/ (operator commands: workflow show/list/reset, operator ...); for operators and record-upgrade-data, no test needs it
	$(GO) -C tools tool -n temporal >/dev/null

record-upgrade-data: temporal-cli ## record cmd/chorus/testdata/upgrade-<version> (a data dir of the old dev server, CLI 1.5.1) for TestOldDevServerDataUpgradesInPlace; refuses to overwrite a recorded one
	CHORUS_TEMPORAL_CLI_BIN="$$($(GO) -C tools tool -n temporal)" $(GO) test -tags record -count=1 -run '^TestRecordOldDevServerData$$' ./cmd/chorus/

screenshot: temporal ## docs/temporal-ui-workflows.png: the Temporal UI's workflow list with Chorus's columns, taken in headless Chromium (apt-get install -y chromium) on a stack of its own
	$(GO) -C tools/screenshot run . --repo $(CURDIR) --out docs/temporal-ui-workflows.png

screenshots: temporal ## docs/console/*.png: the console's main pages over a demo project, taken in headless Chromium (apt-get install -y chromium) by TestConsoleTour
	CHORUS_SCREENSHOTS=$(CURDIR)/docs/console CHORUS_TEMPORAL_SERVER_BIN="$$($(GO) -C tools/server tool -n go.temporal.io/server/cmd/server)" $(GO) test -count=1 -run '^TestConsoleTour$$' ./console

up: ## production-like stack with Docker Compose (needs Docker)
	docker compose up -d --build

down:
	docker compose down
