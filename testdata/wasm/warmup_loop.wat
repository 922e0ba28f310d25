;; warmup_loop: a reactor (it exports _initialize, as Go's c-shared
;; runtime does, so the host warms its instances up with one synthetic
;; decision) whose permhost_decide loops for ever on the warm-up request
;; (its input contains "permhost-warmup") and rejects every other request
;; at once. A warm-up used to run before the plugin was ready, under ten
;; times its timeout, and held every decision meanwhile.
;; Expected: the first decision rejects, at once; the warm-up times out in
;; the background (no warm-up from then on).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"reject\",\"reason\":\"warmup_loop: not the warm-up\"}")
  (data (i32.const 192) "permhost-warmup")

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

  ;; $warmup reports whether the input contains the 15 bytes at 192.
  (func $warmup (result i32)
    (local $n i64) (local $at i64) (local $k i32)
    (local.set $n (call $input_length))
    (block $no
      (loop $next
        (br_if $no (i64.gt_u (i64.add (local.get $at) (i64.const 15)) (local.get $n)))
        (local.set $k (i32.const 0))
        (block $mismatch
          (loop $cmp
            (br_if $mismatch
              (i32.ne
                (call $input_load_u8 (i64.add (local.get $at) (i64.extend_i32_u (local.get $k))))
                (i32.load8_u (i32.add (i32.const 192) (local.get $k)))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br_if $cmp (i32.lt_u (local.get $k) (i32.const 15))))
          (return (i32.const 1)))
        (local.set $at (i64.add (local.get $at) (i64.const 1)))
        (br $next)))
    (i32.const 0))

  (func (export "_initialize"))

  (func (export "permhost_abi") (result i32)
    (call $output (i32.const 0))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (if (call $warmup)
      (then (loop $forever (br $forever))))
    (call $output (i32.const 64))
    (i32.const 0)))
