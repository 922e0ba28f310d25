# Builds every example plugin into $(OUT). Run by the top Makefile's
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
# $(OUT)/NAME.wasm.
# Add a Go plugin by appending its directory name here.
GO_PLUGINS := plan-mode protect-secrets explainer team-rules

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

ALL_PLUGINS := $(GO_PLUGINS) $(AS_PLUGINS) $(C_PLUGINS)

.PHONY: all names std FORCE
all: $(ALL_PLUGINS:%=$(OUT)/%.wasm) $(OUT)/TOOLCHAIN

# The plugins' names, for the test of the standard plugins.
names:
	@echo $(ALL_PLUGINS)

$(OUT):
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

# TOOLCHAIN: what built $(OUT), one line per toolchain; internal/stdplugins
# keeps the one of the committed modules.
$(OUT)/TOOLCHAIN: $(OUT)/.toolchain-go $(OUT)/.toolchain-c $(AS_PLUGINS:%=$(EXAMPLES)/%/node_modules/.package-lock.json) | $(OUT)
	@{ cat $(OUT)/.toolchain-go; \
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

# go build writes to a temporary name first so that an interrupted build
# never leaves a truncated .wasm that looks up to date.
define go_plugin
$(OUT)/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/*.go) $(EXAMPLES)/$(1)/go.mod $(EXAMPLES)/$(1)/go.sum $(GO_PLUGIN_DEPS) $(OUT)/.toolchain-go | $(OUT)
	cd $(EXAMPLES)/$(1) && $(GO_ENV) $(GO) $(GO_BUILD) -o $$(abspath $$@).tmp .
	mv $$@.tmp $$@
endef
$(foreach p,$(GO_PLUGINS),$(eval $(call go_plugin,$(p))))

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
