;; call_tree: a loop-free call tree. f0..f39 each call the next twice and f40
;; does nothing: 2^40 calls, hours of work, and not one loop header where
;; wazero would look for cancellation.
;; Expected: timeout, within the same deadline as a plain loop.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  ;; Strings end at the first zero byte (memory starts zeroed).
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"abstain\",\"reason\":\"call tree finished\"}")

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

  (func $f0 (call $f1) (call $f1))
  (func $f1 (call $f2) (call $f2))
  (func $f2 (call $f3) (call $f3))
  (func $f3 (call $f4) (call $f4))
  (func $f4 (call $f5) (call $f5))
  (func $f5 (call $f6) (call $f6))
  (func $f6 (call $f7) (call $f7))
  (func $f7 (call $f8) (call $f8))
  (func $f8 (call $f9) (call $f9))
  (func $f9 (call $f10) (call $f10))
  (func $f10 (call $f11) (call $f11))
  (func $f11 (call $f12) (call $f12))
  (func $f12 (call $f13) (call $f13))
  (func $f13 (call $f14) (call $f14))
  (func $f14 (call $f15) (call $f15))
  (func $f15 (call $f16) (call $f16))
  (func $f16 (call $f17) (call $f17))
  (func $f17 (call $f18) (call $f18))
  (func $f18 (call $f19) (call $f19))
  (func $f19 (call $f20) (call $f20))
  (func $f20 (call $f21) (call $f21))
  (func $f21 (call $f22) (call $f22))
  (func $f22 (call $f23) (call $f23))
  (func $f23 (call $f24) (call $f24))
  (func $f24 (call $f25) (call $f25))
  (func $f25 (call $f26) (call $f26))
  (func $f26 (call $f27) (call $f27))
  (func $f27 (call $f28) (call $f28))
  (func $f28 (call $f29) (call $f29))
  (func $f29 (call $f30) (call $f30))
  (func $f30 (call $f31) (call $f31))
  (func $f31 (call $f32) (call $f32))
  (func $f32 (call $f33) (call $f33))
  (func $f33 (call $f34) (call $f34))
  (func $f34 (call $f35) (call $f35))
  (func $f35 (call $f36) (call $f36))
  (func $f36 (call $f37) (call $f37))
  (func $f37 (call $f38) (call $f38))
  (func $f38 (call $f39) (call $f39))
  (func $f39 (call $f40) (call $f40))
  (func $f40 nop)

  (func (export "permhost_decide") (result i32)
    (call $f0)
    (call $output (i32.const 64))
    (i32.const 0)))
