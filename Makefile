# permhost — see README.md. Every target works on a fresh clone.
GO        ?= go
BUILD     := build
BIN       := $(BUILD)/permhost
PLUGINS   := $(BUILD)/plugins
GOTEST    ?= $(GO) test
TESTFLAGS ?= -count=1 -timeout 20m

# The packages that drive real processes and compile real Go plugins run
# without the race detector in `make test`: a -race permhost compiles a 3 MB
# plugin ~10x slower, which took the suite past 15 minutes on 2 cores.
# Everything else runs with -race; `make test-race` (part of `make check`)
# runs all of it with -race.
SLOW_PKGS := ./e2e ./plugins/examples ./bench

export PERMHOST_PLUGINS_DIR := $(abspath $(PLUGINS))

.PHONY: all build plugins plugin-docs build-plugins test test-race check demo bench soak fuzz clean wat load-web

# plugins first: it may refresh the modules the binary embeds.
all: plugins
	@$(MAKE) --no-print-directory build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/permhost

# Example plugins: each its own module under plugins/examples, built
# reproducibly into build/plugins and reused by the tests (first builds take
# ~30 s each). `plugins` also refreshes the standard plugins embedded in
# permhost (internal/stdplugins: the modules, the TOOLCHAIN that built
# them, and CONFIGKEYS, the configuration keys each declares) from that
# build; the tests only build (build-plugins), and internal/stdplugins' test
# fails when the committed modules are not what the sources build to
# (plugins/examples', when CONFIGKEYS is not what they declare).
STD := internal/stdplugins

plugins:
	@$(MAKE) --no-print-directory -f plugins/examples/plugins.mk OUT=$(abspath $(PLUGINS)) STD=$(abspath $(STD)) std
	@# CONFIGKEYS: each standard plugin's configuration keys, known without
	@# compiling it (a first run checks a configuration at once).
	$(GO) test -count=1 ./plugins/examples -run '^TestStandardConfigKeys$$' -update

# The standard plugins' READMEs, copied into package docs (go:embed cannot
# reach plugins/examples from there) for `permhost plugins NAME`; docs'
# test fails when a copy differs from its README.
plugin-docs:
	rm -f docs/plugins/*.md
	for w in $(STD)/*.wasm; do n=$$(basename $$w .wasm); cp plugins/examples/$$n/README.md docs/plugins/$$n.md; done

build-plugins:
	@$(MAKE) --no-print-directory -f plugins/examples/plugins.mk OUT=$(abspath $(PLUGINS))

# The README's first command: a scripted agent session through the default
# policy (examples/permhost.toml, the standard plugins inside the binary),
# offline; it needs only Go.
demo: build
	$(BIN) demo --log $(BUILD)/demo-decisions.jsonl

# Both steps run whatever the first gives, so that one run reports every
# failure; make still fails when either did.
test: build build-plugins
	status=0; \
	$(GOTEST) -race $(TESTFLAGS) $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/plugins/examples$$' -e '/bench$$') || { status=1; echo "make test: the -race step failed" >&2; }; \
	$(GOTEST) $(TESTFLAGS) $(SLOW_PKGS) || { status=1; echo "make test: the step of $(SLOW_PKGS) failed" >&2; }; \
	exit $$status

test-race: build build-plugins
	$(GOTEST) -race $(TESTFLAGS) ./...

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) mod tidy
	@git diff --exit-code go.mod go.sum || (echo "go mod tidy changed go.mod/go.sum"; exit 1)
	$(MAKE) test-race

# Measurements (BENCHMARKS.md explains each row). bench: every comparison
# side by side in one run, 3-10 min; soak: 1,000,000 messages and 10,000
# permission requests through the real binary, ~1 min, then SIM_SEEDS
# seeds of the simulation (docs/simulation.md), ~12 min; fuzz: every native
# fuzz target for FUZZTIME each (FUZZ filters "dir:FuzzName"; FUZZFLAGS,
# e.g. -parallel=1, go to each go test), outcomes appended to
# build/fuzz.tsv, which the next `make bench` tabulates.
FUZZTIME ?= 30s
SIM_SEEDS ?= 20000
FUZZ     ?= .

bench: build build-plugins
	$(GO) run ./bench/cmd/permhost-bench -permhost $(BIN) -plugins $(PLUGINS) -out BENCHMARKS.md

soak: build build-plugins
	PERMHOST_SOAK=long PERMHOST_SOAK_REPORT=$(abspath $(BUILD))/soak.md $(GOTEST) -count=1 -timeout 25m -run '^TestSoak' -v ./e2e
	PERMHOST_SIM_SEEDS=$(SIM_SEEDS) $(GOTEST) -count=1 -timeout 60m -run '^TestSimulation$$' ./policy

# The web approver under load: 50 agents x 20 pending requests, two pages
# (figures in $(BUILD)/load-web.md, which make bench includes in
# BENCHMARKS.md, "The leader's web approver under load").
load-web:
	mkdir -p $(BUILD)
	PERMHOST_LOAD=1 PERMHOST_LOAD_REPORT=$(abspath $(BUILD))/load-web.md $(GOTEST) -count=1 -timeout 10m -run '^TestLoad$$' -v ./internal/web

fuzz:
	bench/fuzz.sh $(FUZZTIME) '$(FUZZ)'

# Reassemble the hand-written fixtures (needs wabt); tests use the committed .wasm.
wat:
	for f in testdata/wasm/*.wat; do wat2wasm --enable-all "$$f" -o "$${f%.wat}.wasm"; done

clean:
	rm -rf $(BUILD)
