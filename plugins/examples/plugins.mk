# Builds every example plugin into $(OUT). Included by the top Makefile's
# `plugins` target; filled in as plugins arrive.
OUT ?= ../../build/plugins
.PHONY: all
all:
	@mkdir -p $(OUT)
