;; input_offset: reads its input the way the Extism C PDK's
;; extism_load_input does, through input_offset and load_u8 on the block
;; it names, and compares every byte with input_load_u8. It answers
;; {"outcome":"allow"} when the block holds exactly the input (its length
;; too, and the same offset on a second call), {"outcome":"reject"}
;; otherwise.
(module
  (import "extism:host/env" "input_offset" (func $input_offset (result i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 32) "{\"outcome\":\"allow\"}")
  (data (i32.const 64) "{\"outcome\":\"reject\"}")

  ;; $answer outputs the len bytes at p.
  (func $answer (param $p i32) (param $len i32) (result i32)
    (local $b i64) (local $i i32)
    (local.set $b (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $p) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $output_set (local.get $b) (i64.extend_i32_u (local.get $len)))
    (i32.const 0))

  (func (export "permhost_abi") (result i32)
    (call $answer (i32.const 0) (i32.const 21)))

  (func (export "permhost_decide") (result i32)
    (local $off i64) (local $n i64) (local $i i64)
    (local.set $off (call $input_offset))
    (local.set $n (call $input_length))
    (if (i64.ne (call $input_offset) (local.get $off))
      (then (return (call $answer (i32.const 64) (i32.const 20)))))
    (if (i64.ne (call $length (local.get $off)) (local.get $n))
      (then (return (call $answer (i32.const 64) (i32.const 20)))))
    (block $done
      (loop $cmp
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (if (i32.ne (call $load_u8 (i64.add (local.get $off) (local.get $i)))
                    (call $input_load_u8 (local.get $i)))
          (then (return (call $answer (i32.const 64) (i32.const 20)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $cmp)))
    (call $answer (i32.const 32) (i32.const 19))))
