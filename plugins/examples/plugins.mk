# Builds every example plugin into $(OUT). Run by the top Makefile's
# `plugins` target (make -f plugins/examples/plugins.mk OUT=...); works from
# any directory and with -j. A plugin is rebuilt only when its own sources,
# the pdk helper or the abi package change.
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

# AssemblyScript plugins: each an npm project in $(EXAMPLES)/NAME (assembly/*.ts,
# asconfig.json), built to $(OUT)/NAME.wasm. npm ci installs exactly the
# versions pinned in its package-lock.json.
AS_PLUGINS := readonly-as

# C plugins: each a directory $(EXAMPLES)/NAME with main.c (and the
# permhost.h of docs/abi.md), built to $(OUT)/NAME.wasm for wasm32 without a
# C library: Debian's clang and lld are all it takes (apt-get install clang
# lld), and these are the flags docs/abi.md gives.
C_PLUGINS := no-force-push
CLANG     ?= clang
C_FLAGS   := --target=wasm32 -nostdlib -ffreestanding -O2 -Wl,--no-entry

.PHONY: all
all: $(GO_PLUGINS:%=$(OUT)/%.wasm) $(AS_PLUGINS:%=$(OUT)/%.wasm) $(C_PLUGINS:%=$(OUT)/%.wasm)

$(OUT):
	@mkdir -p $@

# go build writes to a temporary name first so that an interrupted build
# never leaves a truncated .wasm that looks up to date.
define go_plugin
$(OUT)/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/*.go) $(EXAMPLES)/$(1)/go.mod $(EXAMPLES)/$(1)/go.sum $(GO_PLUGIN_DEPS) | $(OUT)
	cd $(EXAMPLES)/$(1) && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -o $$(abspath $$@).tmp .
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
$(OUT)/$(1).wasm: $(wildcard $(EXAMPLES)/$(1)/*.c) $(wildcard $(EXAMPLES)/$(1)/*.h) | $(OUT)
	@command -v $(CLANG) >/dev/null && command -v wasm-ld >/dev/null || \
		{ echo "$(1): needs clang and lld (wasm-ld); on Debian: apt-get install clang lld" >&2; exit 1; }
	$(CLANG) $(C_FLAGS) -Wall -Wextra -Werror -o $$(abspath $$@).tmp $(EXAMPLES)/$(1)/main.c
	mv $$@.tmp $$@
endef
$(foreach p,$(C_PLUGINS),$(eval $(call c_plugin,$(p))))
