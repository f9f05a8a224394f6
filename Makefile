# Sluice build targets. `make test` is the command the README gives; it needs
# only Go. Targets that need other software (peer brokers, Python or Node
# clients, a browser) are separate and installed by .ci/run.

GO ?= go
PKGS := ./...

.PHONY: all build test vet generate check-generated man dist fuzz bench interop examples console-test websocket-test scale backlog bench-memory

all: build test

build:
	$(GO) build -o bin/sluice ./cmd/sluice

# The README's test command: formatting, vet, then every package's tests.
# It needs only Go.
test: vet
	$(GO) test -count=1 -timeout 15m $(PKGS)

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

# Every generated file comes from a //go:generate line next to the code it
# serves; generators live under gen/.
generate:
	$(GO) generate $(PKGS)

# Fails when regenerating changes a checked-in file (the AMQP generator
# reads the OASIS XML from Debian's amqp-specs package).
check-generated: generate
	@git diff --exit-code --stat -- . || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- docs protocol grammar man)" || { git status --short; echo "generation made new files: commit them"; exit 1; }

# The man pages, man/sluice*.1, from the command tree (gen/mangen); part of
# make generate too.
man:
	$(GO) generate ./cmd/sluice

# Release archives for linux and darwin, amd64 and arm64, and SHA256SUMS,
# in dist/ (scripts/dist.sh; PLATFORMS and VERSION override its defaults).
dist:
	sh scripts/dist.sh

# Short runs of every fuzz target (FUZZTIME per target).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Tests with real non-Go clients (interop/, build tag interop): stomp.py
# (Debian's python3-stomp, run by /usr/bin/python3) and @stomp/stompjs on
# Node 20 (pinned in interop/package-lock.json). .ci/run installs them; here
# the Node packages are (re)installed with npm ci when interop/node_modules is
# missing or older than the lock file. A client that is not installed is
# skipped, except under CI (CI set), where that fails.
interop:
	@if [ -f interop/package-lock.json ] && command -v npm >/dev/null 2>&1 && \
	  { [ ! -f interop/node_modules/.package-lock.json ] || \
	    [ interop/package-lock.json -nt interop/node_modules/.package-lock.json ]; }; then \
	  echo "npm ci in interop/"; (cd interop && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	fi
	$(GO) test -count=1 -v -tags interop -timeout 10m ./interop/...

# The quick starts of examples/, each against one fresh broker on free
# loopback ports (examples/config/quickstart.toml, a temporary data
# directory), then a summary; fails if any fails. The Python and Node clients
# are the ones make interop uses; scripts/run-examples.sh says what it needs.
examples:
	bash scripts/run-examples.sh

# Browser test of the web console: a real broker, Debian's headless Chromium
# (apt-get install chromium) driven by playwright-core (npm ci in
# internal/admin/webtest), a raw STOMP client; and a monitor user on the
# admin server of internal/admin/webtest/fixture. Screenshots go to docs/
# (SCREENSHOTS=DIR to put them elsewhere).
console-test: build
	$(GO) build -o bin/console-fixture ./internal/admin/webtest/fixture
	@test -d internal/admin/webtest/node_modules/playwright-core || (cd internal/admin/webtest && npm ci --no-audit --no-fund)
	cd internal/admin/webtest && SLUICE_BIN=$(CURDIR)/bin/sluice FIXTURE_BIN=$(CURDIR)/bin/console-fixture node --test console.test.mjs

# Browser test of STOMP over WebSocket: @stomp/stompjs (pinned in
# protocol/stomp/ws/webtest/package-lock.json, npm ci when node_modules is
# missing or older than the lock file) in Debian's headless Chromium
# (apt-get install chromium), driven by playwright-core, against a real
# `sluice serve` (bin/sluice). Skipped without Chromium or Node, except
# under CI (CI set), where that fails.
WEBTEST := protocol/stomp/ws/webtest
websocket-test: build
	@if [ ! -f $(WEBTEST)/node_modules/.package-lock.json ] || \
	    [ $(WEBTEST)/package-lock.json -nt $(WEBTEST)/node_modules/.package-lock.json ]; then \
	  echo "npm ci in $(WEBTEST)/"; (cd $(WEBTEST) && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	fi
	SLUICE_BIN=$(CURDIR)/bin/sluice $(GO) test -count=1 -v -tags webtest -timeout 5m ./$(WEBTEST)/

# A million persistent messages scheduled on one queue: memory per message,
# SIGKILL while they wait, delivery within 50 ms of their time after restart.
scale:
	SLUICE_SCALE=1 $(GO) test -count=1 -run '^TestScaleScheduled$$' -v -timeout 30m ./engine/

# The bounded-memory runs of docs/benchmarks.md: 2,000,000 persistent 1 KiB
# messages filled, the broker SIGKILLed and restarted, then drained
# (COUNT=… for another size); and the comparison with ActiveMQ and RabbitMQ
# (needs Debian's activemq, rabbitmq-server and jq).
backlog: build
	COUNT=$${COUNT:-2000000} scripts/backlog-restart.sh

bench-memory:
	scripts/bench-memory.sh
