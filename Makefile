# fuelsync — every target is a plain go command; nothing else needs installing.
GO        ?= go
PKGS      := ./...
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN       := bin/fuelsync
FUZZTIME  ?= 30s
BENCHTIME ?= 5x
BENCHCOUNT ?= 5

.PHONY: all build test vet fmtcheck demo fuzz bench bench-render bench-large golden clean ci

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/fuelsync

# The test command CI runs: formatting and vet first, then every test (fuzz seed
# corpora included).
test: fmtcheck vet
	$(GO) test -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmtcheck:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The main job on the bundled examples: validate the quickstart, the real Fuel data
# (its warnings are the known traps in upstream data), and a scratch copy of the
# quickstart with one mistake, to show a diagnostic; the quickstart's component
# registry as the creation wizard sees it; a role conflict, found on the merged model.
demo: build
	@echo "== fuelsync --repo examples/quickstart validate"
	@$(BIN) --repo examples/quickstart validate
	@echo
	@echo "== fuelsync --repo examples/fuel-mitaka validate   (real upstream data, unmodified)"
	@$(BIN) --repo examples/fuel-mitaka validate
	@echo
	@echo "== a scratch copy of the quickstart with package_version '7.0.0' (exit status 1 expected)"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  sed -i "s/package_version: '4.0.0'/package_version: '7.0.0'/" $$tmp/quickstart/plugins/monitoring/metadata.yaml && \
	  (cd $$tmp && $(CURDIR)/$(BIN) --repo quickstart validate; echo "exit status $$?"); rm -rf $$tmp
	@echo
	@echo "== fuelsync --repo examples/quickstart components --cluster demo   (the creation wizard's view)"
	@$(BIN) --repo examples/quickstart components --cluster demo
	@echo
	@echo "== fuelsync --repo examples/quickstart render --out rendered/quickstart   (SPEC §6 artifacts)"
	@$(BIN) --repo examples/quickstart render --out rendered/quickstart
	@echo
	@echo "== rendered/quickstart/demo/nodes/node-1/default.yaml   (the primary controller's deployment graph)"
	@cat rendered/quickstart/demo/nodes/node-1/default.yaml
	@echo
	@echo "== fuelsync --repo examples/quickstart explain --cluster demo --node node-2 keystone"
	@$(BIN) --repo examples/quickstart explain --cluster demo --node node-2 keystone || true
	@$(BIN) --repo examples/quickstart explain --cluster demo --node node-2 --why-not post-check
	@echo
	@echo "== fuelsync --repo examples/quickstart --workdir rendered/workdir plan   (nothing applied yet: every node is new)"
	@rm -rf rendered/workdir
	@$(BIN) --repo examples/quickstart --workdir rendered/workdir plan --cluster demo
	@echo
	@echo "== fuelsync --repo examples/quickstart --workdir rendered/workdir apply"
	@$(BIN) --repo examples/quickstart --workdir rendered/workdir --quiet apply
	@$(BIN) --repo examples/quickstart --workdir rendered/workdir plan --detailed-exitcode | tail -1
	@echo "   state: rendered/workdir/state.json -> $$(readlink rendered/workdir/state.json); $$(grep -o '"serial": [0-9]*' rendered/workdir/state.json)"
	@echo
	@echo "== a scratch copy of the quickstart with tag rabbitmq unassigned from node-2: plan"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  sed -i "s/tags: {assign: \[backup\]}/tags: {assign: [backup], unassign: [rabbitmq]}/" $$tmp/quickstart/clusters/demo.yaml && \
	  $(BIN) --repo $$tmp/quickstart --workdir rendered/workdir plan; rm -rf $$tmp
	@echo
	@echo "== a scratch copy of the quickstart with node-1 as controller and compute (exit status 1 expected)"
	@tmp=$$(mktemp -d) && cp -r examples/quickstart $$tmp/ && \
	  sed -i "s/node-1: {id: 1, roles: \[controller\]}/node-1: {id: 1, roles: [controller, compute]}/" $$tmp/quickstart/clusters/demo.yaml && \
	  (cd $$tmp && $(CURDIR)/$(BIN) --repo quickstart validate; echo "exit status $$?"); rm -rf $$tmp

# Coverage-guided fuzzing of every parser, FUZZTIME each.
fuzz:
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzDecodeYAML$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzClusterHCL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzPathLoader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./expr -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./render -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzTruncateMiddle$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzUnified$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzTruncateMiddleLines$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./diff -run '^$$' -fuzz '^FuzzFence$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./reconcile -run '^$$' -fuzz '^FuzzParsePush$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./capabilities -run '^$$' -fuzz '^FuzzParseTemplate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s
	$(GO) test ./capabilities -run '^$$' -fuzz '^FuzzParseEnvironment$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s

# Benchmarks, including the large generated repository. Quote medians:
#   make bench BENCHCOUNT=10 | tee bench.txt
# The rendering and diff benchmarks of the acceptance-size repository report their own
# medians over RENDER_BENCHTIME iterations (render/render_bench_test.go,
# cmd/fuelsync/diff_bench_test.go); make bench-render runs them alone.
# BenchmarkCommands runs the reconciler's commands (validate, render, apply, plan)
# as child processes on repogen's heavy shape at 200 nodes, COMMANDS_BENCHTIME
# iterations, and reports medians, peak RSS and ratios to render itself
# (cmd/fuelsync/commands_bench_test.go).
bench:
	$(GO) test ./... -run '^$$' -bench . -skip '^Benchmark(Resolve|RenderLarge|RenderLargeFull|DiffLarge|Commands|CommandsLarge)$$' -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT)
	$(GO) test ./cmd/fuelsync -run '^$$' -bench '^BenchmarkCommands$$' -benchtime $(COMMANDS_BENCHTIME) -count 1 -timeout 0
	$(MAKE) --no-print-directory bench-render

COMMANDS_BENCHTIME ?= 3x
LARGE_NODES ?= 2000
LARGE_BENCHTIME ?= 1x

# The same commands on the heavy shape at LARGE_NODES nodes (2000 or 8000); one
# iteration of 2,000 nodes takes some minutes on two cores.
bench-large:
	$(GO) test ./cmd/fuelsync -run '^$$' -bench '^BenchmarkCommandsLarge$$/^nodes=$(LARGE_NODES)$$' -benchtime $(LARGE_BENCHTIME) -count 1 -timeout 0

RENDER_BENCHTIME ?= 5x

bench-render:
	$(GO) test ./render -run '^$$' -bench '^Benchmark(Resolve|RenderLarge|RenderLargeFull)$$' -benchtime $(RENDER_BENCHTIME) -count 1 -timeout 0
	$(GO) test ./cmd/fuelsync -run '^$$' -bench '^BenchmarkDiffLarge$$' -benchtime $(RENDER_BENCHTIME) -count 1 -timeout 0

# Rewrite golden files and testscript expectations.
golden:
	FUELSYNC_UPDATE=1 $(GO) test -count=1 $(PKGS)

ci: test

clean:
	rm -rf bin rendered
