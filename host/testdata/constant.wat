;; constant: the cheapest well-behaved plugin, for the warm-path benchmark.
;; It answers every request with the same abstain and moves its output into
;; the Extism block with one store_u64 per 8 bytes (the output is padded with
;; spaces to a multiple of 8, which JSON allows), so a decision costs three
;; kernel calls plus eight stores instead of good.wasm's one store_u8 per byte.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  ;; 24 bytes
  (data (i32.const 0) "{\"major\":1,\"minor\":0}   ")
  ;; 64 bytes
  (data (i32.const 64) "{\"outcome\":\"abstain\",\"reason\":\"constant fixture\"}" "               ")

  ;; $output copies len bytes (a multiple of 8) at ptr into a fresh block
  ;; and makes it the output.
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
    (call $output (i32.const 0) (i32.const 24))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (call $output (i32.const 64) (i32.const 64))
    (i32.const 0)))
