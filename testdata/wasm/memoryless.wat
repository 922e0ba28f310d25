;; memoryless: a module without linear memory whose exports trap. The host
;; once classified the trap by looking at the memory and dereferenced a nil
;; pointer on the background load goroutine, which killed the process.
;; Expected: load failure (trap in permhost_abi), never a panic.
(module
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (func (export "permhost_abi") (result i32)
    unreachable)

  (func (export "permhost_decide") (result i32)
    unreachable))
