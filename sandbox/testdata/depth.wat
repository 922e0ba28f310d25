;; Every way out of a function, for the call-depth counter: it must be back
;; to 0 after each export returns. Also a bounded and an unbounded recursion,
;; a function with a heavy frame, and a bulk-memory runaway.
(module
  (type $binop (func (param i32 i32) (result i32)))
  (memory 16 16)
  (table $t 2 funcref)
  (elem (table $t) (i32.const 0) func $tail_down $add)

  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))

  ;; return from inside nested blocks, and falling off the end
  (func (export "ret") (param i32) (result i32)
    (block
      (block
        (br_if 1 (i32.eqz (local.get 0)))
        (return (i32.const 1))))
    (i32.const 2))

  ;; br, br_if and br_table to the function's own label
  (func (export "br_out") (param i32) (result i32)
    (i32.const 10)
    (br_if 0 (i32.eq (local.get 0) (i32.const 1)))
    (drop)
    ;; n-2 = 0: to the block (n+1 returned); anything else: out (n)
    (block (result i32)
      (br_table 0 1 1 (local.get 0) (i32.sub (local.get 0) (i32.const 2))))
    (i32.const 1)
    (i32.add)
    (br 0))

  ;; two results through a branch to the function label
  (func $pair (param i32) (result i32 i32)
    (local.get 0) (i32.const 5)
    (br_if 0 (local.get 0))
    (drop) (drop)
    (i32.const 7) (i32.const 8))
  (func (export "pair_sum") (param i32) (result i32)
    (call $pair (local.get 0))
    (i32.add))

  ;; tail calls never grow the depth: a million of them
  (func $tail_down (export "tail_down") (param i32 i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (local.get 1))
      (else
        (return_call $tail_via_table
          (i32.sub (local.get 0) (i32.const 1))
          (i32.add (local.get 1) (i32.const 1))))))
  (func $tail_via_table (param i32 i32) (result i32)
    (return_call_indirect $t (type $binop) (local.get 0) (local.get 1) (i32.const 0)))

  ;; plain recursion n deep: the frames count toward the bound
  (func $down (export "down") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (i32.const 0))
      (else (i32.add (call $down (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))

  ;; the same, ending in a call of a leaf function, which does not count
  (func $down_add (export "down_add") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (call $add (i32.const 0) (i32.const 0)))
      (else (i32.add (call $down_add (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))

  ;; the same with 63 locals besides the parameter: weight 1 + 64/32 = 3
  (func $heavy (export "heavy") (param i32) (result i32)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (if (result i32) (i32.eqz (local.get 0))
      (then (i32.const 0))
      (else (i32.add (call $heavy (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))

  ;; bulk memory in a function: copies and fills n bytes, returns a byte
  (func (export "bulk") (param i32) (result i32)
    (memory.fill (i32.const 0) (i32.const 7) (local.get 0))
    (memory.copy (i32.const 4096) (i32.const 0) (local.get 0))
    (i32.load8_u (i32.const 4096)))

  ;; fills 1 MiB forever: each iteration is a few instructions and a
  ;; microsecond-scale fill
  (func (export "fill_forever")
    (loop $l
      (memory.fill (i32.const 0) (i32.const 1) (i32.const 0x100000))
      (br $l)))

  ;; fill_forever that counts its fills (960 KiB each) in the i32 at
  ;; 0xf0000, past what it fills
  (func (export "fill_counted")
    (loop $l
      (memory.fill (i32.const 0) (i32.const 1) (i32.const 0xf0000))
      (i32.store (i32.const 0xf0000) (i32.add (i32.load (i32.const 0xf0000)) (i32.const 1)))
      (br $l)))
)
