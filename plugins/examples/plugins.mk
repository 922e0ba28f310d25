# Builds every example plugin into $(OUT): the standard plugins embedded in
# permhost as $(OUT)/NAME.wasm, the Go reference implementations of four of
# them (the pdk's examples) as $(OUT)/go/NAME.wasm. Run by the top Makefile's
# `plugins` target (make -f plugins/examples/plugins.mk OUT=...); works from
# any directory and with -j. A plugin is rebuilt only when its own sources,
# the pdk helper, the abi package or its toolchain change.
#
# The builds are reproducible: the same sources and toolchain give the same
# bytes on any machine and in any directory (no paths, build ids or VCS
# stamps; the environment that changes Go's output is pinned below). That is
# what lets the standard plugins embedded in permhost (internal/stdplugins,
# refreshed by the `std` target) be checked against a fresh build:
# $(OUT)/TOOLCHAIN records the toolchains that built $(OUT).
EXAMPLES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
OUT      ?= $(EXAMPLES)/../../build/plugins
GO       ?= go

# Sources every Go plugin depends on besides its own: the pdk and abi
# packages of the root module (which pins github.com/extism/go-pdk).
GO_PLUGIN_DEPS := $(wildcard $(EXAMPLES)/../pdk/*.go) $(EXAMPLES)/../../go.mod \
                  $(wildcard $(EXAMPLES)/../../abi/*.go)

# Go plugins: each a module in $(EXAMPLES)/NAME that requires the root module
# (github.com/permhost/permhost, replaced by this checkout), built to
# $(OUT)/go/NAME.wasm. They are the pdk's examples and the reference
# implementations of the Rust standard plugins of the same name, which a
# differential test (plugins/examples/differential_test.go) holds to
# exactly their answers. Add a Go plugin by appending its directory name.
GO_PLUGINS := plan-mode protect-secrets explainer team-rules

# Rust plugins: the standard plugins in $(STD_SRC)/NAME/main.rs, std only,
# sharing $(STD_SRC)/common, built to $(OUT)/NAME.wasm by Debian's rustc
# for wasm32-wasi (apt-get install rustc libstd-rust-dev-wasm32; no cargo,
# no crates). RUSTC is /usr/bin/rustc, never a rustup one earlier on PATH:
# CI has only Debian's, and the bytes depend on the compiler. Small modules
# compile in milliseconds (RATIONALE.md). --remap-path-prefix keeps the
# checkout's path out of the panic messages, so the bytes do not depend on
# where the repository is.
RUST_PLUGINS := plan-mode protect-secrets explainer team-rules
STD_SRC      := $(EXAMPLES)/../std
RUSTC        ?= /usr/bin/rustc
RUST_FLAGS   := --edition 2021 --crate-type cdylib --target wasm32-wasi -C opt-level=3 -C lto \
                -C target-feature=+bulk-memory \
                -C panic=abort -C codegen-units=1 -C strip=symbols \
                --remap-path-prefix=$(abspath $(STD_SRC))=plugins/std

# Everything that changes what go build writes is given, not inherited: a
# GOFLAGS, GOWASM or GOEXPERIMENT in the environment would change the bytes;
# GOTOOLCHAIN=local never downloads another Go. -trimpath keeps the machine's
# paths out, -buildvcs=false the checkout's revision, -buildid= the build id
# (a hash of the inputs that includes the toolchain's own).
GO_ENV   := GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWASM= GOEXPERIMENT= GOTOOLCHAIN=local
GO_BUILD := build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-buildid=

# AssemblyScript plugins: each an npm project in $(EXAMPLES)/NAME (assembly/*.ts,
# asconfig.json), built to $(OUT)/NAME.wasm. npm ci installs exactly the
# versions pinned in its package-lock.json, the compiler's included.
AS_PLUGINS := readonly-as

# C plugins: each a directory $(EXAMPLES)/NAME with main.c (and the
# permhost.h of docs/abi.md), built to $(OUT)/NAME.wasm for wasm32 without a
# C library: Debian's clang and lld are all it takes (apt-get install clang
# lld), and these are the flags docs/abi.md gives. Without -g nothing of the
# machine gets in; the module's producers section names the clang version.
C_PLUGINS := no-force-push
CLANG     ?= clang
WASM_LD   ?= wasm-ld
C_FLAGS   := --target=wasm32 -nostdlib -ffreestanding -O2 -Wl,--no-entry

# The standard plugins: what internal/stdplugins embeds.
ALL_PLUGINS := $(RUST_PLUGINS) $(AS_PLUGINS) $(C_PLUGINS)

.PHONY: all names std FORCE
all: $(ALL_PLUGINS:%=$(OUT)/%.wasm) $(GO_PLUGINS:%=$(OUT)/go/%.wasm) $(OUT)/TOOLCHAIN

# The plugins' names, for the test of the standard plugins.
names:
	@echo $(ALL_PLUGINS)

$(OUT) $(OUT)/go:
	@mkdir -p $@

# One stamp per toolchain, rewritten only when its version changes, so that
# a new toolchain rebuilds what it builds and nothing else.
$(OUT)/.toolchain-go: FORCE | $(OUT)
	@v="go $$(cd $(EXAMPLES) && $(GO_ENV) $(GO) env GOVERSION)"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(OUT)/.toolchain-c: FORCE | $(OUT)
	@command -v $(CLANG) >/dev/null && command -v $(WASM_LD) >/dev/null || \
		{ echo "$(C_PLUGINS): needs clang and lld (wasm-ld); on Debian: apt-get install clang lld" >&2; exit 1; }
	@v="$$(printf 'clang %s\nwasm-ld %s' "$$($(CLANG) --version | head -n 1)" "$$($(WASM_LD) --version | head -n 1)")"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@

$(OUT)/.toolchain-rust: FORCE | $(OUT)
	@test -x $(RUSTC) && test -d "$$($(RUSTC) --print sysroot)/lib/rustlib/wasm32-wasi" || \
		{ echo "$(RUST_PLUGINS): need Debian's rustc with the wasm32-wasi std; on Debian: apt-get install rustc libstd-rust-dev-wasm32" >&2; exit 1; }
	@v="$$($(RUSTC) --version)"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@

# TOOLCHAIN: what built the standard plugins of $(OUT), one line per
# toolchain; internal/stdplugins keeps the one of the committed modules.
# (Go builds only the reference implementations, so it is not named.)
$(OUT)/TOOLCHAIN: $(OUT)/.toolchain-rust $(OUT)/.toolchain-c $(AS_PLUGINS:%=$(EXAMPLES)/%/node_modules/.package-lock.json) | $(OUT)
	@{ cat $(OUT)/.toolchain-rust; \
	   for p in $(AS_PLUGINS); do echo "assemblyscript $$(cd $(EXAMPLES)/$$p && node_modules/.bin/asc --version | sed 's/^Version //')"; done; \
	   cat $(OUT)/.toolchain-c; } > $@.tmp
	@mv $@.tmp $@

# std: refresh the committed standard plugins in $(STD) from $(OUT), only
# the files that differ (the top Makefile's `plugins` target).
std: all
	@test -n "$(STD)" || { echo "std: give STD=DIR" >&2; exit 1; }
	@for f in $(ALL_PLUGINS:%=%.wasm) TOOLCHAIN; do \
		cmp -s $(OUT)/$$f $(STD)/$$f || { cp $(OUT)/$$f $(STD)/$$f && chmod 644 $(STD)/$$f && echo "updated $(STD)/$$f"; }; \
	done
	@# A module no longer standard leaves the binary.
	@for f in $(STD)/*.wasm; do \
		case " $(ALL_PLUGINS) " in *" $$(basename $$f .wasm) "*) ;; *) rm -f $$f && echo "removed $$f";; esac; \
	done

# go build writes to a temporary name first so that an interrupted build
# never leaves a truncated .wasm that looks up to date.
define go_plugin
$(OUT)/go/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/*.go) $(EXAMPLES)/$(1)/go.mod $(EXAMPLES)/$(1)/go.sum $(GO_PLUGIN_DEPS) $(OUT)/.toolchain-go | $(OUT)/go
	cd $(EXAMPLES)/$(1) && $(GO_ENV) $(GO) $(GO_BUILD) -o $$(abspath $$@).tmp .
	mv $$@.tmp $$@
endef
$(foreach p,$(GO_PLUGINS),$(eval $(call go_plugin,$(p))))

define rust_plugin
$(OUT)/$(1).wasm: $(wildcard $(STD_SRC)/$(1)/*.rs) $(wildcard $(STD_SRC)/common/*.rs) $(EXAMPLES)/plugins.mk $(OUT)/.toolchain-rust | $(OUT)
	$(RUSTC) $(RUST_FLAGS) -o $$(abspath $$@).tmp $(abspath $(STD_SRC))/$(1)/main.rs
	mv $$@.tmp $$@
endef
$(foreach p,$(RUST_PLUGINS),$(eval $(call rust_plugin,$(p))))

# npm ci runs only when the lock file changed (npm writes
# node_modules/.package-lock.json; touch marks it current).
define as_plugin
$(EXAMPLES)/$(1)/node_modules/.package-lock.json: $(EXAMPLES)/$(1)/package.json $(EXAMPLES)/$(1)/package-lock.json
	cd $(EXAMPLES)/$(1) && npm ci --no-audit --no-fund --loglevel=error
	touch $$@

$(OUT)/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/assembly/*.ts) $(EXAMPLES)/$(1)/asconfig.json $(EXAMPLES)/$(1)/node_modules/.package-lock.json | $(OUT)
	cd $(EXAMPLES)/$(1) && node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile $$(abspath $$@).tmp
	mv $$@.tmp $$@
endef
$(foreach p,$(AS_PLUGINS),$(eval $(call as_plugin,$(p))))

define c_plugin
$(OUT)/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/*.c) $(wildcard $(EXAMPLES)/$(1)/*.h) $(OUT)/.toolchain-c | $(OUT)
	$(CLANG) $(C_FLAGS) -Wall -Wextra -Werror -o $$(abspath $$@).tmp $(EXAMPLES)/$(1)/main.c
	mv $$@.tmp $$@
endef
$(foreach p,$(C_PLUGINS),$(eval $(call c_plugin,$(p))))
