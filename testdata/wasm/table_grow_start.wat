;; table_grow_start: the start function grows a table by 2^30 entries and
;; traps if the grow is refused. It runs inside instantiation, at load:
;; unguarded, the grow killed permhost before any plugin decided.
;; Expected: load failure (the start function traps), quickly.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)
  (table $t 1 funcref)

  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"abstain\",\"reason\":\"table_grow_start should never be called\"}")

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

  (func $start
    (if (i32.eq (table.grow $t (ref.null func) (i32.const 0x40000000)) (i32.const -1))
      (then unreachable)))
  (start $start)

  (func (export "permhost_abi") (result i32)
    (call $output (i32.const 0))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (call $output (i32.const 64))
    (i32.const 0)))
