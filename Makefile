# fuelsync — every target is a plain go command; nothing else needs installing.
GO        ?= go
PKGS      := ./...
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN       := bin/fuelsync
FUZZTIME  ?= 30s
BENCHTIME ?= 1x
BENCHCOUNT ?= 5

.PHONY: all build test vet fmtcheck demo fuzz bench golden clean ci

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

# The main job on the bundled example.
demo: build
	@echo "== fuelsync validate --repo examples/quickstart"
	@$(BIN) --repo examples/quickstart validate
	@echo
	@echo "== fuelsync validate --repo examples/fuel-mitaka --quiet (real upstream data)"
	@$(BIN) --repo examples/fuel-mitaka --quiet validate 2>/dev/null || true
	@$(BIN) --repo examples/fuel-mitaka validate 2>/dev/null | tail -1

# Coverage-guided fuzzing of every parser, FUZZTIME each.
fuzz:
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzDecodeYAML$$' -fuzztime $(FUZZTIME)
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzClusterHCL$$' -fuzztime $(FUZZTIME)
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzPathLoader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./loader -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME)

# Benchmarks, including the large generated repository. Quote medians:
#   make bench BENCHCOUNT=10 | tee bench.txt
bench:
	$(GO) test ./... -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT)

# Rewrite golden files and testscript expectations.
golden:
	FUELSYNC_UPDATE=1 $(GO) test -count=1 $(PKGS)

ci: test

clean:
	rm -rf bin
