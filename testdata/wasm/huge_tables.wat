;; huge_tables: eight tables declaring 100 million entries each (6.4 GB of
;; wazero's table slices at instantiation) and one table more than
;; Limits.MaxTables allows.
;; Expected: load failure naming MaxTables before anything is allocated.
(module
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (table 100000000 funcref) (table 100000000 funcref) (table 100000000 funcref)
  (table 100000000 funcref) (table 100000000 funcref) (table 100000000 funcref)
  (table 100000000 funcref) (table 100000000 funcref)
  (table 0 funcref) (table 0 funcref) (table 0 funcref) (table 0 funcref)
  (table 0 funcref) (table 0 funcref) (table 0 funcref) (table 0 funcref)
  (table 0 funcref)
  (func (export "permhost_abi") (result i32) (i32.const 0))
  (func (export "permhost_decide") (result i32) (i32.const 0)))
