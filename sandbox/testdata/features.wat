;; Exercises encodings the rewriter must decode and renumber: multi-value
;; blocks with type indices, loops with parameters, bulk memory, SIMD,
;; reference types, tables and element segments of every form, ref.func in
;; globals, tail calls, a start function, saturating truncation, atomics,
;; sign extension, br_table, typed select, and the name section. (This wabt
;; cannot write try_table, which is all wazero accepts of exception handling;
;; decoder tests cover it.)
(module $features
  (type $pair (func (param i32) (result i32 i32)))
  (type $binop (func (param i32 i32) (result i32)))
  (import "test" "tick" (func $tick))
  (import "testg" "g" (global $imported i32))
  (memory 1 1 shared)
  (table $t 4 funcref)
  (table $t2 2 externref)
  (global $counter (mut i32) (i32.const 0))
  (global $fref funcref (ref.func $add))
  (elem (table $t) (i32.const 0) func $add $sub)
  (elem funcref (ref.func $add) (ref.null func))
  (elem declare func $mul)
  (data (i32.const 16) "hello")
  (data $passive "world")
  (start $init)
  (func $init (global.set $counter (i32.const 7)))
  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binop) (i32.sub (local.get 0) (local.get 1)))
  (func $mul (type $binop) (i32.mul (local.get 0) (local.get 1)))
  (func $tail (param i32 i32) (result i32)
    (return_call $add (local.get 0) (local.get 1)))
  (func $tail_indirect (param i32 i32 i32) (result i32)
    (return_call_indirect $t (type $binop) (local.get 0) (local.get 1) (local.get 2)))
  (func (export "run") (param $n i32) (result i32) (local $acc i32) (local $v v128)
    ;; multi-value block with a type index
    (local.get $n)
    (block (type $pair)
      (i32.const 3))
    (local.set $acc (i32.add))
    ;; a loop with a parameter
    (local.get $n)
    (loop $l (param i32)
      (local.set $acc (i32.add (local.get $acc)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (local.get $n)
      (br_if $l (i32.gt_s (local.get $n) (i32.const 0)))
      (drop))
    ;; bulk memory and passive data
    (memory.init $passive (i32.const 32) (i32.const 0) (i32.const 5))
    (memory.copy (i32.const 48) (i32.const 16) (i32.const 5))
    (memory.fill (i32.const 64) (i32.const 1) (i32.const 4))
    (data.drop $passive)
    (local.set $acc (i32.add (local.get $acc) (i32.load8_u (i32.const 50))))
    ;; SIMD
    (local.set $v (i32x4.splat (local.get $acc)))
    (local.set $v (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 (local.get $v) (v128.const i32x4 1 2 3 4)))
    (local.set $v (v128.load32_lane 1 (i32.const 16) (local.get $v)))
    (local.set $acc (i32.add (local.get $acc) (i32x4.extract_lane 2 (local.get $v))))
    ;; reference types and tables
    (table.set $t (i32.const 2) (global.get $fref))
    (drop (table.grow $t2 (ref.null extern) (i32.const 1)))
    (local.set $acc (i32.add (local.get $acc) (table.size $t2)))
    (table.init $t 1 (i32.const 3) (i32.const 0) (i32.const 1))
    (drop (ref.func $mul))
    (local.set $acc (call_indirect $t (type $binop) (local.get $acc) (i32.const 1) (i32.const 2)))
    (local.set $acc (call $tail (local.get $acc) (i32.const 10)))
    (local.set $acc (call $tail_indirect (local.get $acc) (i32.const 1) (i32.const 1)))
    ;; saturating truncation, sign extension
    (local.set $acc (i32.add (local.get $acc) (i32.trunc_sat_f32_s (f32.const 1e10))))
    (local.set $acc (i32.add (local.get $acc) (i32.extend8_s (i32.const 0xff))))
    ;; atomics
    (drop (i32.atomic.rmw.add (i32.const 0) (i32.const 5)))
    (atomic.fence)
    (local.set $acc (i32.add (local.get $acc) (i32.atomic.load (i32.const 0))))
    ;; br_table and typed select
    (block $a (block $b (br_table $a $b $a (i32.and (local.get $acc) (i32.const 1)))))
    (local.set $acc (select (result i32) (local.get $acc) (i32.const 0) (i32.const 1)))
    (call $tick)
    (i32.add (local.get $acc) (i32.add (global.get $counter) (global.get $imported))))
)
