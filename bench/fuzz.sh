#!/bin/sh
# fuzz.sh runs every native Go fuzz target in the repository (nested plugin
# modules included) for FUZZTIME each, one after another, and lists the
# targets that failed. A failing input is saved by `go test` under the
# package's testdata/fuzz/FuzzXxx/, where it stays as a regression seed.
#
#	bench/fuzz.sh [FUZZTIME] [TARGET_REGEXP]
#
# FUZZTIME defaults to 30s; TARGET_REGEXP (default: every target) filters
# "dir:FuzzName", e.g. 'acp:|FuzzDecodeDecision'. FUZZFLAGS adds flags to
# each `go test`, e.g. FUZZFLAGS=-parallel=1 to leave a core free. Each
# target's outcome is appended to build/fuzz.tsv (UTC time, target, fuzz
# time, ok or FAILED, executions), from which `make bench` writes the
# fuzzing section of BENCHMARKS.md.
set -u
fuzztime=${1:-30s}
filter=${2:-.}
cd "$(dirname "$0")/.." || exit 2

targets=$(grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.git --exclude-dir=build '^func Fuzz' . |
	sort | while read -r file; do
		dir=$(dirname "$file")
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file" | while read -r name; do
			echo "${dir#./}:$name"
		done
	done | grep -E -- "$filter")

if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz target matches $filter" >&2
	exit 2
fi

mkdir -p build
results=build/fuzz.tsv
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=""
n=0
for t in $targets; do
	dir=${t%%:*}
	name=${t#*:}
	n=$((n + 1))
	echo "=== fuzz $dir $name for $fuzztime"
	# Run in the package's directory so that nested modules (plugins/...)
	# use their own go.mod.
	corpus="$dir/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | wc -l)
	(cd "$dir" && go test ${FUZZFLAGS:-} -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" . 2>&1) | tee "$log"
	after=$(ls "$corpus" 2>/dev/null | wc -l)
	# The pipe hides go test's exit status; its last lines tell.
	status=ok
	if grep -q '^FAIL' "$log" || ! grep -q '^ok' "$log"; then
		status=FAILED
		# Go 1.26's fuzz coordinator can fail a target at the end of
		# -fuzztime with a bare "context deadline exceeded" and no input
		# (golang/go#75804, fixed in Go 1.27): the time ran clean. A
		# failure that wrote a crasher, or said anything else, is real.
		if [ "$after" -eq "$before" ] &&
			[ "$(grep -c -- '--- FAIL' "$log")" -eq 1 ] &&
			grep -A1 -- '--- FAIL' "$log" | tail -n 1 | grep -qx '    context deadline exceeded'; then
			status=ok-go75804
			echo "fuzz.sh: $dir:$name ended on Go's fuzz-coordinator deadline race (golang/go#75804), no crasher: counted clean"
		fi
	fi
	case $status in ok*) ;; *) failed="$failed $dir:$name" ;; esac
	execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	printf '%s\t%s:%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$dir" "$name" "$fuzztime" "$status" "${execs:-0}" >>"$results"
done

if [ -n "$failed" ]; then
	echo "fuzz.sh: FAILED:$failed (crashers are under each package's testdata/fuzz/)" >&2
	exit 1
fi
echo "fuzz.sh: $n targets ran clean for $fuzztime each"
