#!/bin/sh
# Regenerates the abi_*.wasm handshake variants from abi.wat.in (needs wabt).
set -e
cd "$(dirname "$0")"
gen() { # name abi-output export body decide-params
	sed -e "s|ABI_OUTPUT|$2|" -e "s|ABI_EXPORT|$3|" -e "s|ABI_BODY|$4|" -e "s|(DECIDE_PARAMS)|$5|" abi.wat.in >"$1.wat"
	wat2wasm --enable-all "$1.wat" -o "$1.wasm"
	rm "$1.wat"
}
out='(call $output (i32.const 0))'
gen abi_1_0 '{\\"major\\":1,\\"minor\\":0}' permhost_abi "$out" ''
gen abi_0_9 '{\\"major\\":0,\\"minor\\":9}' permhost_abi "$out" ''
gen abi_2_0 '{\\"major\\":2,\\"minor\\":0}' permhost_abi "$out" ''
gen abi_1_1 '{\\"major\\":1,\\"minor\\":1}' permhost_abi "$out" ''
gen abi_garbage 'nope' permhost_abi "$out" ''
gen abi_no_minor '{\\"major\\":1}' permhost_abi "$out" ''
gen abi_missing '{}' not_permhost_abi "$out" ''
gen abi_traps '{}' permhost_abi 'unreachable' ''
gen abi_decide_param '{\\"major\\":1,\\"minor\\":0}' permhost_abi "$out" '(param i32)'
# Plain fixtures.
for f in constant slow_init input_offset host_env; do wat2wasm --enable-all "$f.wat" -o "$f.wasm"; done
