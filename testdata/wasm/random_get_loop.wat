;; random_get_loop: random_get of 8 MiB in a loop. Each call was 8 MiB of
;; crypto/rand inside one host call, where no deadline check runs; the
;; sandbox fills it in 64 KiB chunks, checking the deadline between them
;; and charging a unit per byte.
;; Expected: timeout, at the deadline.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 129)

  (data (i32.const 0) "{\"major\":1,\"minor\":0}")

  ;; $output copies the zero-terminated string at ptr into a fresh Extism
  ;; block and makes it the call's output.
  (func $output (param $ptr i32)
    (local $len i32) (local $block i64) (local $i i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $ptr) (local.get $len)))))
        (local.set $len (i32.add (local.get $len) (i32.const 1)))
        (br $scan)))
    (local.set $block (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $block) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $output_set (local.get $block) (i64.extend_i32_u (local.get $len))))

  (func (export "permhost_abi") (result i32)
    (call $output (i32.const 0))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (loop $forever
      (drop (call $random_get (i32.const 65536) (i32.const 0x800000)))
      (br $forever))
    unreachable))
