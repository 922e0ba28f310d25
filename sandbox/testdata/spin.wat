;; Runaway shapes for the stop tests, plus a well-behaved function whose
;; result must not change under instrumentation.
(module
  (import "test" "tick" (func $tick))
  ;; a plain infinite loop
  (func (export "loop")
    (loop $l (br $l)))
  ;; a loop that calls a host function on every iteration
  (func (export "host_loop")
    (loop $l (call $tick) (br $l)))
  ;; unbounded recursion: ends in a stack overflow or at the deadline
  (func $recurse (export "recurse") (param i32) (result i32)
    (i32.add (call $recurse (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))
  ;; deep and wide recursion: depth n, 2^n calls, no loop at all
  (func $deep (export "deep") (param i32)
    (if (local.get 0)
      (then
        (call $deep (i32.sub (local.get 0) (i32.const 1)))
        (call $deep (i32.sub (local.get 0) (i32.const 1))))))
  ;; sum 1..n with a loop: the result must survive instrumentation
  (func (export "sum") (param i32) (result i64) (local i64)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get 0)))
        (local.set 1 (i64.add (local.get 1) (i64.extend_i32_u (local.get 0))))
        (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
        (br $l)))
    (local.get 1))
)
