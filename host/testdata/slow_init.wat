;; slow_init: a plugin whose _initialize (the reactor start function, as Go's
;; c-shared runtime has) busy-waits for 150 ms of monotonic clock before the
;; plugin can decide, which is longer than a 100 ms decision deadline.
;; permhost_decide allows, except that an input of more than 4096 bytes makes
;; it trap, so a test can make an instance fail on purpose. Calling
;; permhost_decide before _initialize traps as well.
(module
  (import "wasi_snapshot_preview1" "clock_time_get"
    (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))

  (memory (export "memory") 1)
  (global $ready (mut i32) (i32.const 0))

  ;; 24 bytes
  (data (i32.const 0) "{\"major\":1,\"minor\":0}   ")
  ;; 40 bytes
  (data (i32.const 64) "{\"outcome\":\"allow\",\"reason\":\"slow_init\"}")

  ;; $now is the monotonic clock in nanoseconds (WASI writes it at 1024).
  (func $now (result i64)
    (drop (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 1024)))
    (i64.load (i32.const 1024)))

  (func (export "_initialize")
    (local $until i64)
    (local.set $until (i64.add (call $now) (i64.const 150000000)))
    (loop $spin
      (br_if $spin (i64.lt_u (call $now) (local.get $until))))
    (global.set $ready (i32.const 1)))

  (func $output (param $ptr i32) (param $len i32)
    (local $block i64) (local $i i32)
    (local.set $block (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u64
          (i64.add (local.get $block) (i64.extend_i32_u (local.get $i)))
          (i64.load (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $copy)))
    (call $output_set (local.get $block) (i64.extend_i32_u (local.get $len))))

  (func (export "permhost_abi") (result i32)
    (if (i32.eqz (global.get $ready)) (then unreachable))
    (call $output (i32.const 0) (i32.const 24))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (if (i32.eqz (global.get $ready)) (then unreachable))
    (if (i64.gt_u (call $input_length) (i64.const 4096)) (then unreachable))
    (call $output (i32.const 64) (i32.const 40))
    (i32.const 0)))
