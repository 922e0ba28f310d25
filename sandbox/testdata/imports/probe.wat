;; Asks WASI for the environment, the arguments and a preopened directory.
(module
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $e (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $a (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $p (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "probe") (result i32)
    (drop (call $e (i32.const 0) (i32.const 4)))
    (drop (call $a (i32.const 8) (i32.const 12)))
    (call $p (i32.const 3) (i32.const 16))))
