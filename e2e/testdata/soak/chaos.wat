;; chaos: the soak test's plugin. It finds the first "chaos:" in its input
;; (the soak agent puts "chaos:X" in each tool call's title) and acts on X:
;;   a allow   r reject   x, c abstain   b invalid JSON output
;;   t trap (unreachable)   l loop until the host's deadline stops it
;; Anything else, or no marker, abstains.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"allow\",\"reason\":\"chaos a\"}")
  (data (i32.const 128) "{\"outcome\":\"reject\",\"reason\":\"chaos r\"}")
  (data (i32.const 192) "{\"outcome\":\"abstain\"}")
  (data (i32.const 256) "{\"outcome\":")
  (data (i32.const 320) "chaos:")

  ;; $output sets the zero-terminated string at ptr as the output.
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

  ;; $marker returns the byte after the first "chaos:" of the input, 0 if none.
  (func $marker (result i32)
    (local $n i64) (local $i i64) (local $k i32)
    (local.set $n (call $input_length))
    (block $none
      (loop $at
        (br_if $none (i64.gt_u (i64.add (local.get $i) (i64.const 7)) (local.get $n)))
        (local.set $k (i32.const 0))
        (block $mismatch
          (loop $cmp
            (br_if $mismatch (i32.ne
              (call $input_load_u8 (i64.add (local.get $i) (i64.extend_i32_u (local.get $k))))
              (i32.load8_u (i32.add (i32.const 320) (local.get $k)))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (if (i32.eq (local.get $k) (i32.const 6))
              (then (return (call $input_load_u8 (i64.add (local.get $i) (i64.const 6))))))
            (br $cmp)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $at)))
    (i32.const 0))

  (func (export "permhost_abi") (result i32)
    (call $output (i32.const 0))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (local $m i32)
    (local.set $m (call $marker))
    (if (i32.eq (local.get $m) (i32.const 97)) (then (call $output (i32.const 64)) (return (i32.const 0))))  ;; a
    (if (i32.eq (local.get $m) (i32.const 114)) (then (call $output (i32.const 128)) (return (i32.const 0)))) ;; r
    (if (i32.eq (local.get $m) (i32.const 98)) (then (call $output (i32.const 256)) (return (i32.const 0))))  ;; b
    (if (i32.eq (local.get $m) (i32.const 116)) (then unreachable))                                           ;; t
    (if (i32.eq (local.get $m) (i32.const 108)) (then (loop $forever (br $forever))))                         ;; l
    (call $output (i32.const 192))
    (i32.const 0)))
