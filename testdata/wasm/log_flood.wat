;; log_flood: permhost_decide calls log_info one million times, each with a
;; fresh 16-byte block (the Extism host frees a block once it is logged): 16 MB
;; of logs in all, then abstains. The host must bound what it keeps.
;; Expected: a decision (abstain, reason "logged 1000000 lines") with captured
;; logs within the log limit under a generous deadline; timeout under a short
;; one.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))

  (memory (export "memory") 1)

  ;; Strings end at the first zero byte (memory starts zeroed).
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"abstain\",\"reason\":\"logged 1000000 lines\"}")
  (data (i32.const 256) "log_flood: line!")

  ;; $output copies the zero-terminated string at ptr into a fresh Extism
  ;; block and makes it the call's output. (The same helper is in every
  ;; fixture, so that each one stands alone.)
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
    (local $msg i64) (local $i i32)
    (loop $flood
      (local.set $msg (call $alloc (i64.const 16)))
      (call $store_u64 (local.get $msg) (i64.load (i32.const 256)))
      (call $store_u64 (i64.add (local.get $msg) (i64.const 8)) (i64.load (i32.const 264)))
      (call $log_info (local.get $msg))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $flood (i32.lt_u (local.get $i) (i32.const 1000000))))
    (call $output (i32.const 64))
    (i32.const 0)))
