;; scripted: a well-behaved plugin whose decision comes from its
;; configuration, for end-to-end tests of the decision pipeline.
;;   [plugin.config]
;;   decision = '{"outcome":"reject","reason":"..."}'  ; output verbatim
;;   delay_ms = 500                                     ; wait first
;; permhost_decide first waits delay_ms milliseconds of monotonic time
;; (WASI clock_time_get in a loop, so that the host's deadline and the
;; caller's cancellation can stop it at every iteration), then outputs the
;; config value "decision" as it stands; with none it abstains.
;; Expected: that decision (a bad-output failure if it is not a valid one);
;; timeout when delay_ms is past the deadline; cancelled when the caller
;; gives up first.
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  ;; Strings end at the first zero byte (memory starts zeroed).
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "delay_ms")
  (data (i32.const 96) "decision")
  (data (i32.const 128) "{\"outcome\":\"abstain\",\"reason\":\"scripted fixture: no decision configured\"}")
  (data (i32.const 256) "{\"name\":\"scripted\",\"version\":\"1.0.0\",\"description\":\"decision and delay from its config\",\"configKeys\":[\"decision\",\"delay_ms\"]}")
  ;; 1024..1031: clock_time_get's result.

  ;; $block copies the zero-terminated string at ptr into a fresh Extism
  ;; block and returns the block.
  (func $block (param $ptr i32) (result i64)
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
    (local.get $block))

  (func $output_block (param $block i64)
    (call $output_set (local.get $block) (call $length (local.get $block))))

  ;; $now is the monotonic clock in nanoseconds.
  (func $now (result i64)
    (drop (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 1024)))
    (i64.load (i32.const 1024)))

  ;; $delay_ms reads config delay_ms as a decimal number (non-digits are
  ;; skipped); 0 when absent.
  (func $delay_ms (result i64)
    (local $b i64) (local $n i64) (local $i i64) (local $c i32) (local $ms i64)
    (local.set $b (call $config_get (call $block (i32.const 64))))
    (if (i64.eqz (local.get $b)) (then (return (i64.const 0))))
    (local.set $n (call $length (local.get $b)))
    (block $done
      (loop $digits
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $c (call $load_u8 (i64.add (local.get $b) (local.get $i))))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57)))
          (then
            (local.set $ms (i64.add
              (i64.mul (local.get $ms) (i64.const 10))
              (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $digits)))
    (local.get $ms))

  (func (export "permhost_abi") (result i32)
    (call $output_block (call $block (i32.const 0)))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (local $until i64) (local $d i64)
    (local.set $until (i64.add (call $now) (i64.mul (call $delay_ms) (i64.const 1000000))))
    (block $waited
      (loop $wait
        (br_if $waited (i64.ge_u (call $now) (local.get $until)))
        (br $wait)))
    (local.set $d (call $config_get (call $block (i32.const 96))))
    (if (i64.eqz (local.get $d)) (then (local.set $d (call $block (i32.const 128)))))
    (call $output_block (local.get $d))
    (i32.const 0))

  (func (export "permhost_describe") (result i32)
    (call $output_block (call $block (i32.const 256)))
    (i32.const 0)))
