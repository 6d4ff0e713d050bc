# fuelsync — every target is a plain go command; nothing else needs installing.
GO        ?= go
PKGS      := ./...
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# urfave_cli_no_docs leaves out urfave/cli's man-page and markdown generators
# (and the markdown parser they initialise at every start), which fuelsync
# does not use: fuelsync version and shell completion start faster.
TAGS      := urfave_cli_no_docs
# fuelsync_testhooks builds the failpoints in (base/failpoint: the store's
# steps the kill tests kill or fail, FUELSYNC_FAILPOINTS, the render counts): the
# tests run with it, a released binary (build) never has it.
TESTTAGS  := fuelsync_testhooks
BIN       := bin/fuelsync
# fuelsync-server: fuelsync plus serve's Prometheus metrics and the state on etcd;
# fuelsync runs it for serve and the state on etcd, found beside itself.
SERVER_BIN := $(dir $(BIN))fuelsync-server
FUZZTIME  ?= 30s
BENCHTIME ?= 5x
BENCHCOUNT ?= 5

.PHONY: all build install release image bench-deploy test test-e2e test-etcd vet cross fmtcheck demo fuzz bench bench-render bench-fpb bench-shapes bench-large bench-fleet bench-shards takeover golden soak burst clean ci

all: build

# Static binaries (CGO_ENABLED=0): no dynamic loader and no libc start-up at
# every run (about half a millisecond of each fuelsync command), and they run
# on any Linux.
build:
	CGO_ENABLED=0 $(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/fuelsync
	CGO_ENABLED=0 $(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(SERVER_BIN) ./cmd/fuelsync-server
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(dir $(BIN))fuelsync-agent ./cmd/fuelsync-agent

# The three binaries (fuelsync, fuelsync-server, fuelsync-agent), built as make
# build does, into $(DESTDIR)$(PREFIX)/bin:
#   make install                       (/usr/local/bin, as root)
#   make install PREFIX=$HOME/.local    (~/.local/bin, no root)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
install: build
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BIN) $(SERVER_BIN) $(dir $(BIN))fuelsync-agent $(DESTDIR)$(BINDIR)/

# The release archives: the three binaries cross-compiled (static, -trimpath) for
# each of RELEASE_PLATFORMS into bin/release/OS-ARCH, then packed by
# internal/release/pack into $(DIST)/fuelsync-$(VERSION)-OS-ARCH.tar.gz (the
# binaries and README.md in one directory, files dated at the commit: the same
# commit gives the same bytes) and $(DIST)/SHA256SUMS (sha256sum -c checks it).
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
DIST ?= dist
release:
	@rm -rf bin/release $(DIST)
	@for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "GOOS=$$os GOARCH=$$arch go build ./cmd/fuelsync ./cmd/fuelsync-server ./cmd/fuelsync-agent"; \
	  for cmd in fuelsync fuelsync-server fuelsync-agent; do \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" \
	      -o bin/release/$$os-$$arch/$$cmd$$ext ./cmd/$$cmd || exit 1; \
	  done; \
	done
	$(GO) run ./internal/release/pack -version $(VERSION) -created $$(git log -1 --format=%ct 2>/dev/null || echo 0) \
	  -o $(DIST) $(addprefix bin/release/,$(subst /,-,$(RELEASE_PLATFORMS)))

# The image of fuelsync-server (with fuelsync beside it), as a docker-archive
# tarball (docker save's layout, OCI media types) for docker load, podman load
# or crane push: no container daemon, no base image,
# nothing fetched but Go modules. Static binaries (CGO_ENABLED=0), user 65532,
# entrypoint fuelsync-server, working directory and volume /var/lib/fuelsync,
# the CA certificates of this machine (Debian: ca-certificates), labels
# org.opencontainers.image.version, .revision, .source; files dated at the
# commit, so that the same commit gives the same image (internal/image,
# docs/production.md).
IMAGE      ?= bin/fuelsync-server-image.tar
IMAGE_TAG  ?= fuelsync-server:$(subst +,-,$(VERSION))
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o bin/image/fuelsync ./cmd/fuelsync
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o bin/image/fuelsync-server ./cmd/fuelsync-server
	$(GO) run ./internal/image -server bin/image/fuelsync-server -cli bin/image/fuelsync -arch $(IMAGE_ARCH) \
	  -version $(VERSION) -revision $(COMMIT) -created $$(git log -1 --format=%ct 2>/dev/null || echo 0) \
	  -tag $(IMAGE_TAG) -o $(IMAGE)

# The test command CI runs: formatting and vet first, then every test (fuzz seed
# corpora included) but the end-to-end ones below, with the test hooks built
# in: go test's output without -v, then the tests that were skipped and why,
# the slowest packages and tests, and the counts (internal/testreport). Each
# package's tests are stopped after TEST_TIMEOUT (go test's default, 10m,
# ended internal/cli on a loaded two-core machine before it could say which
# test hung); TEST_PARALLEL tests marked parallel run at once (the CLI's
# scripts wait on processes, servers and git more than they compute).
TEST_TIMEOUT  ?= 30m
TEST_PARALLEL ?= 4
test: fmtcheck vet cross
	$(GO) run ./internal/testreport -count=1 -timeout $(TEST_TIMEOUT) -parallel $(TEST_PARALLEL) -tags "$(TESTTAGS)" -skip '$(E2E_TESTS)' $(PKGS)

# The end-to-end tests that build binaries of their own (with the flags of make
# build, go install and make image) or kill and fail applies by the hundred:
# more than half of make test's time on two cores. make test leaves them out,
# test-e2e runs them, and CI runs both (.ci/run, make ci).
E2E_TESTS := ^(TestApplyCrashSafety|TestApplyFailedStepReportsState|TestDispatchToServer|TestVersionFromGoBuild|TestReleasedBuildHasNoTestHooks|TestImage)$$
E2E_PKGS  := ./internal/cli ./internal/image
test-e2e:
	$(GO) run ./internal/testreport -count=1 -timeout $(TEST_TIMEOUT) -tags "$(TESTTAGS)" -run '$(E2E_TESTS)' $(E2E_PKGS)

# Deployment runs at scale: serve's coordinator and API here, simulated agents
# in a child process over loopback HTTP, each task 0-DEPLOY_TASK_MS ms, on a generated
# repository of DEPLOY_NODES nodes in DEPLOY_CLUSTERS clusters deployed at once
# (docs/deploy.md, Scale). The rendered set is kept in $$TMPDIR between runs.
DEPLOY_NODES ?= 2000
DEPLOY_CLUSTERS ?= 1
DEPLOY_TASK_MS ?= 50
bench-deploy:
	DEPLOY_NODES=$(DEPLOY_NODES) DEPLOY_CLUSTERS=$(DEPLOY_CLUSTERS) DEPLOY_TASK_MS=$(DEPLOY_TASK_MS) $(GO) test -run '^$$' -bench 'BenchmarkDeploy$$' -benchtime 1x -count $(or $(DEPLOY_COUNT),1) -timeout 3h ./server

# Only the tests that run a real etcd (Debian: apt-get install etcd-server);
# make test runs them too, but skips them when etcd is missing: here that fails.
# Here the replicas' leader is killed 20 times (5 in make test).
test-etcd:
	FUELSYNC_REQUIRE_ETCD=1 FUELSYNC_REPLICA_KILLS=20 FUELSYNC_SHARD_KILLS=20 $(GO) test -count=1 -tags "$(TESTTAGS)" -run 'Etcd' ./state/... ./controller/... ./server/... ./internal/cli

# Both builds: without the test hooks (as released) and with them (as tested).
vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags "$(TESTTAGS)" $(PKGS)

# macOS and Windows: every package, with its tests and with the test hooks,
# cross-compiled and vetted (go vet type-checks the tests), so that the everyday
# commands keep building there. fuelsync writes a work directory on Linux only
# (state/system_other.go: the lock says "not supported on this system"); the
# tests of what writes one are built on Linux only. Nothing runs here for
# those systems: it is a compilation check.
CROSS_GOOS ?= darwin windows
cross:
	@for os in $(CROSS_GOOS); do \
	  echo "GOOS=$$os go build ./... && go vet ./... (and -tags $(TESTTAGS))"; \
	  GOOS=$$os $(GO) build -tags "$(TAGS)" $(PKGS) && \
	  GOOS=$$os $(GO) vet $(PKGS) && \
	  GOOS=$$os $(GO) vet -tags "$(TESTTAGS)" $(PKGS) || exit 1; \
	done

fmtcheck:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The tour of the three bundled examples, from this clone alone (nothing else needs
# to be beside it). quickstart: validate, a diagnostic, the component registry,
# render, explain, plan, apply (from a saved plan, with its own output), an edit
# planned, a role conflict. fuel-mitaka: the real Fuel 9.x data validated (its
# warnings are the known traps in upstream data) and one node explained.
# tripleo-capabilities: the Heat registry each cluster resolves by capabilities,
# and capabilities find/summary on the templates.
DEMO ?= rendered/demo
demo: build
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== fuelsync --repo examples/quickstart validate"
	@$(BIN) --repo examples/quickstart validate
	@echo
	@echo "== a scratch copy of the quickstart with package_version '7.0.0' (exit status 1 expected)"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  sed -i "s/package_version: '4.0.0'/package_version: '7.0.0'/" $$tmp/quickstart/plugins/monitoring/metadata.yaml && \
	  (cd $$tmp && $(abspath $(BIN)) --repo quickstart validate; echo "exit status $$?"); rm -rf $$tmp
	@echo
	@echo "== fuelsync --repo examples/quickstart components --cluster demo   (the creation wizard's view)"
	@$(BIN) --repo examples/quickstart components --cluster demo
	@echo
	@echo "== fuelsync --repo examples/quickstart render --out $(DEMO)/quickstart   (the artifacts)"
	@$(BIN) --repo examples/quickstart render --out $(DEMO)/quickstart
	@echo
	@echo "== $(DEMO)/quickstart/demo/nodes/node-1/default.yaml   (the primary controller's deployment graph)"
	@cat $(DEMO)/quickstart/demo/nodes/node-1/default.yaml
	@echo
	@echo "== fuelsync --repo examples/quickstart explain --cluster demo --node node-2 keystone"
	@$(BIN) --repo examples/quickstart explain --cluster demo --node node-2 keystone
	@$(BIN) --repo examples/quickstart explain --cluster demo --node node-2 --why-not post-check
	@echo
	@echo "== fuelsync --repo examples/quickstart --workdir $(DEMO)/workdir plan --out $(DEMO)/plan.json   (nothing applied yet: every node is new)"
	@$(BIN) --repo examples/quickstart --workdir $(DEMO)/workdir plan --out $(DEMO)/plan.json
	@echo
	@echo "== fuelsync --repo examples/quickstart --workdir $(DEMO)/workdir apply $(DEMO)/plan.json"
	@$(BIN) --repo examples/quickstart --workdir $(DEMO)/workdir apply $(DEMO)/plan.json
	@echo "   state: $(DEMO)/workdir/state.json -> $$(readlink $(DEMO)/workdir/state.json); $$(grep -o '"serial": [0-9]*' $(DEMO)/workdir/state.json)"
	@echo
	@echo "== fuelsync --repo examples/quickstart --workdir $(DEMO)/workdir plan --detailed-exitcode   (applied: no changes, exit status 0)"
	@$(BIN) --repo examples/quickstart --workdir $(DEMO)/workdir plan --detailed-exitcode
	@echo
	@echo "== a scratch copy of the quickstart: tags unassign --cluster demo --node node-2 rabbitmq (the file's diff, what it changes), then plan"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  $(BIN) --repo $$tmp/quickstart tags unassign --cluster demo --node node-2 rabbitmq && \
	  echo "-- fuelsync --repo <the copy> --workdir $(DEMO)/workdir plan" && \
	  $(BIN) --repo $$tmp/quickstart --workdir $(DEMO)/workdir plan; rm -rf $$tmp
	@echo
	@echo "== a scratch copy of the quickstart with node-1 as controller and compute (exit status 1 expected)"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  sed -i "s/node-1: {id: 1, roles: \[controller\]}/node-1: {id: 1, roles: [controller, compute]}/" $$tmp/quickstart/clusters/demo.yaml && \
	  (cd $$tmp && $(abspath $(BIN)) --repo quickstart validate; echo "exit status $$?"); rm -rf $$tmp
	@echo
	@echo "== fuelsync --repo examples/fuel-mitaka validate   (real upstream data, unmodified)"
	@$(BIN) --repo examples/fuel-mitaka validate
	@echo
	@echo "== fuelsync --repo examples/fuel-mitaka explain --cluster mitaka-ceph --node node-1 primary-database"
	@$(BIN) --repo examples/fuel-mitaka explain --cluster mitaka-ceph --node node-1 primary-database
	@echo
	@echo "== fuelsync --repo examples/tripleo-capabilities --quiet render --out $(DEMO)/tripleo   (each cluster's registry, chosen by capabilities)"
	@$(BIN) --repo examples/tripleo-capabilities --quiet render --out $(DEMO)/tripleo
	@for c in puppet docker docker-ha; do \
	  echo "-- $(DEMO)/tripleo/$$c/registry.yaml: RabbitMQ"; grep 'Services::RabbitMQ' $(DEMO)/tripleo/$$c/registry.yaml; done
	@echo
	@echo "== fuelsync capabilities find -r -c deployment=docker -c ha=pacemaker examples/tripleo-capabilities/tht   (the warnings above not repeated)"
	@$(BIN) capabilities find -r -c deployment=docker -c ha=pacemaker examples/tripleo-capabilities/tht 2>/dev/null
	@echo
	@echo "== fuelsync capabilities summary --format text -f <the three RabbitMQ templates>"
	@$(BIN) capabilities summary --format text -f examples/tripleo-capabilities/tht/puppet/services/rabbitmq.yaml \
	  -f examples/tripleo-capabilities/tht/docker/services/rabbitmq.yaml -f examples/tripleo-capabilities/tht/docker/services/pacemaker/rabbitmq.yaml

# Coverage-guided fuzzing of every parser, FUZZTIME each. FuzzClusterHCL and
# FuzzCheck set their own, shorter minimization (testenv.ShortMinimize): with
# 10 s for each new input they ran a few inputs a second.
fuzz:
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzDecodeYAML$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzClusterHCL$$' -fuzztime $(FUZZTIME)
	$(GO) test ./specedit -run '^$$' -fuzz '^FuzzEditHCL$$' -fuzztime $(FUZZTIME)
	$(GO) test ./reports -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./api -run '^$$' -fuzz '^FuzzFit$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzCheckBranchName$$' -fuzztime $(FUZZTIME)
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzPathLoader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./expr -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./render -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME)
	$(GO) test ./render -run '^$$' -fuzz '^FuzzParseNodeFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./render -run '^$$' -fuzz '^FuzzPlainWord$$' -fuzztime $(FUZZTIME)
	$(GO) test ./render -run '^$$' -fuzz '^FuzzParseAddress$$' -fuzztime $(FUZZTIME)
	$(GO) test ./base/names -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME)
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzTruncateMiddle$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzUnified$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzTruncateMiddleLines$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzFence$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzScanNodeV2$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzSplitCatalogue$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./server -run '^$$' -fuzz '^FuzzParsePush$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./state -run '^$$' -fuzz '^FuzzParseStateURL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./etcdstate -run '^$$' -fuzz '^FuzzDecodeHeader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./capabilities -run '^$$' -fuzz '^FuzzParseTemplate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./capabilities -run '^$$' -fuzz '^FuzzParseEnvironment$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./base/safetext -run '^$$' -fuzz '^FuzzLine$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s

# Benchmarks, including the large generated repository. Quote medians:
#   make bench BENCHCOUNT=10 | tee bench.txt
# The rendering and diff benchmarks of the acceptance-size repository report their own
# medians over RENDER_BENCHTIME iterations (render/render_bench_test.go,
# internal/cli/diff_bench_test.go); make bench-render runs them alone.
# BenchmarkCommands runs the reconciler's commands (validate, render, apply, plan)
# as child processes on repogen's heavy shape at 200 nodes, COMMANDS_BENCHTIME
# iterations, and reports medians, peak RSS and ratios to render itself
# (internal/cli/commands_bench_test.go).
bench:
	$(GO) test ./... -run '^$$' -bench . -skip '^Benchmark(Resolve|RenderLarge|RenderLargeFull|RenderShapes|DiffLarge|Commands|CommandsLarge|CommandsFleet|Shards)$$' -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT)
	$(GO) test ./internal/cli -run '^$$' -bench '^BenchmarkCommands$$' -benchtime $(COMMANDS_BENCHTIME) -count 1 -timeout 0
	$(MAKE) --no-print-directory bench-render

COMMANDS_BENCHTIME ?= 3x
LARGE_NODES ?= 2000
LARGE_BENCHTIME ?= 1x

# The same commands on the heavy shape at LARGE_NODES nodes (2000 or 8000); one
# iteration of 2,000 nodes takes some minutes on two cores.
bench-large:
	$(GO) test ./internal/cli -run '^$$' -bench '^BenchmarkCommandsLarge$$/^nodes=$(LARGE_NODES)$$' -benchtime $(LARGE_BENCHTIME) -count 1 -timeout 0

# A fleet: the heavy shape's plugins and tasks with FLEET_NODES nodes in
# FLEET_CLUSTERS clusters (20,000 in 40 by default; FLEET_NODES=100000
# FLEET_CLUSTERS=50 for 50 clusters of 2,000), every command a child process,
# FLEET_BENCHTIME iterations (median wall time, peak RSS, artifacts, work
# directory and state size), everything on /dev/shm (internal/cli/fleet_bench_test.go);
# FLEET_STEPS=apply-cold,plan-release runs those steps only.
# 20,000 nodes take some 20 to 30 minutes an iteration on two cores (most of it the
# release change) and about 6 GB of tmpfs; 100,000 nodes five times that. Never
# part of make test.
FLEET_NODES ?= 20000
FLEET_CLUSTERS ?= 40
FLEET_BENCHTIME ?= 1x
bench-fleet:
	TMPDIR=/dev/shm FUELSYNC_FLEET_NODES=$(FLEET_NODES) FUELSYNC_FLEET_CLUSTERS=$(FLEET_CLUSTERS) FUELSYNC_FLEET_STEPS=$(FLEET_STEPS) \
	  $(GO) test ./internal/cli -run '^$$' -bench '^BenchmarkCommandsFleet$$' -benchtime $(FLEET_BENCHTIME) -count 1 -timeout 0

RENDER_BENCHTIME ?= 5x

bench-render:
	$(GO) test ./render -run '^$$' -bench '^Benchmark(Resolve|RenderLarge|RenderLargeFull)$$' -benchtime $(RENDER_BENCHTIME) -count 1 -timeout 0
	$(GO) test ./internal/cli -run '^$$' -bench '^BenchmarkDiffLarge$$' -benchtime $(RENDER_BENCHTIME) -count 1 -timeout 0

# Render against the YAML decode floor on each generated shape (repogen.Heavy and
# the real-data repogen.Mitaka), 4 clusters of 500 and of 2,000 nodes
# (SHAPE_NODES=2000,8000), SHAPE_BENCHTIME iterations (render/render_bench_test.go;
# docs/performance.md). It fails when a shape passes 30 times the floor at 2,000.
SHAPE_NODES ?= 2000,8000
SHAPE_BENCHTIME ?= 3x
bench-shapes:
	FUELSYNC_BENCH_SHAPE_NODES=$(SHAPE_NODES) $(GO) test ./render -run '^$$' -bench '^BenchmarkRenderShapes$$' -benchtime $(SHAPE_BENCHTIME) -count 1 -timeout 0

# `fuelsync plugin check` against fuel-plugin-builder's `fpb --check` on three
# example plugins, FPB_RUNS interleaved rounds: medians of wall and CPU time and
# their ratios (internal/cli/startup_bench_test.go). FPB is fpb's command; how
# to get fuel-plugin-builder 4.2.0 running: docs/cli-startup.md.
FPB ?= $(shell command -v fpb)
FPB_RUNS ?= 11
bench-fpb:
	@test -n "$(FPB)" || { echo "bench-fpb: no fpb on PATH; set FPB=path/to/fpb (docs/cli-startup.md: plugin check against fuel-plugin-builder)"; exit 1; }
	FUELSYNC_FPB="$(FPB)" $(GO) test ./internal/cli -run '^$$' -bench '^BenchmarkStartupPluginCheck$$' -benchtime $(FPB_RUNS)x -count 1 -timeout 0

# The CPU time each `serve --shard` process spends on a release change, for
# N = 1, 2 and 3 replicas over one etcd on loopback, against one replica's
# (BenchmarkShards in internal/cli/shard_bench_test.go; docs/etcd.md, Shards).
# SHARD_NODES nodes in SHARD_CLUSTERS clusters, the median of SHARD_RUNS runs. Needs /usr/bin/etcd.
# SHARD_SHAPE=heavy takes bench-fleet's plugins and tasks; SHARD_GOMAXPROCS=1
# runs each replica with one thread of Go code (the replicas share this
# machine's cores); SHARD_PROFILE=DIR writes each replica's CPU profile.
SHARD_NODES ?= 2000
SHARD_CLUSTERS ?= 12
SHARD_RUNS ?= 3
bench-shards:
	FUELSYNC_REQUIRE_ETCD=1 SHARD_NODES=$(SHARD_NODES) SHARD_CLUSTERS=$(SHARD_CLUSTERS) $(GO) test -count=1 -tags "$(TESTTAGS)" -run '^$$' -bench '^BenchmarkShards$$' -benchtime $(SHARD_RUNS)x -timeout 0 ./internal/cli

# The takeover time of `serve --shard` owners: TAKEOVER_KILLS owners of a
# changed cluster SIGKILLed or SIGSTOPped (every other round) at once after the
# change is committed to git (before the owner applies it), three replicas over one etcd, a 2 s lease; it
# prints the median and the maximum time until another replica applied the
# change (TestEtcdShardsOwnerKilled; make test runs 4 rounds). Needs
# /usr/bin/etcd. About 15 s a round.
TAKEOVER_KILLS ?= 20
takeover:
	FUELSYNC_REQUIRE_ETCD=1 FUELSYNC_SHARD_KILLS=$(TAKEOVER_KILLS) FUELSYNC_SHARD_KILL_DELAY_MS=0 $(GO) test -count=1 -tags "$(TESTTAGS)" -run '^TestEtcdShardsOwnerKilled$$' -v -timeout 0 ./internal/cli | grep -E '^(--- |PASS|FAIL|ok)|round|takeover'

# The serve abuse cases, with figures (resident memory, latencies): 500 slow
# webhook bodies, 5,000 idle keep-alive connections (the server limited to 4,096
# file descriptors), 2,000 component-registry GETs, 1,000 deliveries with 200 KB
# ids; and 10,000 node agents long-polling their graphs (memory per waiting
# agent, p99 of the wake-up after an apply, 304 revalidations per second; make
# test runs it with 200 agents). About 4 minutes. SOAK_BIN=path/to/fuelsync
# attacks another build instead (the abuse cases only).
SOAK_BIN ?=

soak:
	FUELSYNC_SOAK_BIN=$(SOAK_BIN) $(GO) test ./internal/cli -run '^TestSoak' -soak -v -count=1 -timeout 30m

# Agents in bursts: BURST_AGENTS agents (default 5,000, then 10,000) open a
# long-poll (?wait=60s) at the same moment against one serve with its default
# limits; reports held, 429, closed without an answer, and serve's RSS
# (internal/cli/burst_agents_test.go, docs/artifact-api.md). Not part of make
# test. make burst BURST_BIN=path/to/fuelsync-server runs another build.
BURST_AGENTS ?= 5000,10000
BURST_BIN ?=

burst:
	FUELSYNC_BURST_BIN=$(BURST_BIN) $(GO) test ./internal/cli -run '^TestBurstAgents$$' -burst -burst-agents $(BURST_AGENTS) -v -count=1 -timeout 30m

# Rewrite golden files and testscript expectations.
golden:
	FUELSYNC_UPDATE=1 $(GO) test -count=1 -tags "$(TESTTAGS)" $(PKGS)

ci: test test-e2e

clean:
	rm -rf bin rendered dist
