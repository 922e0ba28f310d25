;; huge_table: one table declaring 100 million entries (800 MB of wazero's
;; table slice at instantiation, from a module of a hundred bytes).
;; Expected: load failure naming MaxTableEntries before anything is
;; allocated.
(module
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (table 100000000 funcref)
  (func (export "permhost_abi") (result i32) (i32.const 0))
  (func (export "permhost_decide") (result i32) (i32.const 0)))
