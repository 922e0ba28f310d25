;; Tables and memory under the budget, for grow_test.go: each export does
;; one thing and returns what the instruction returned.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $a 10 funcref)
  (table $b 0 externref)
  (func (export "table_grow") (param i32) (result i32)
    (table.grow $a (ref.null func) (local.get 0)))
  (func (export "table_grow_b") (param i32) (result i32)
    (table.grow $b (ref.null extern) (local.get 0)))
  (func (export "table_size") (result i32)
    (table.size $a))
  (func (export "memory_grow") (param i32) (result i32)
    (memory.grow (local.get 0)))
  ;; table.fill of the whole table, n times
  (func (export "table_fill") (param i32)
    (loop $l
      (table.fill $a (i32.const 0) (ref.null func) (table.size $a))
      (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
      (br_if $l (local.get 0))))
  ;; fd_write(fd, iovs at 1024, count, nwritten at 16) of the iovecs the
  ;; caller wrote; returns the errno, the count at 16
  (func (export "fd_write") (param i32 i32) (result i32)
    (call $fd_write (local.get 0) (i32.const 1024) (local.get 1) (i32.const 16)))
  (func (export "fd_read") (param i32 i32) (result i32)
    (call $fd_read (local.get 0) (i32.const 1024) (local.get 1) (i32.const 16)))
  (func (export "random_get") (param i32 i32) (result i32)
    (call $random_get (local.get 0) (local.get 1)))
  ;; poll_oneoff(subscriptions at 1024, events at 32768, n, nevents at 16)
  (func (export "poll_oneoff") (param i32) (result i32)
    (call $poll_oneoff (i32.const 1024) (i32.const 32768) (local.get 0) (i32.const 16)))
  ;; random_get(p, n) for ever
  (func (export "random_loop") (param i32 i32)
    (loop $l
      (drop (call $random_get (local.get 0) (local.get 1)))
      (br $l))))
