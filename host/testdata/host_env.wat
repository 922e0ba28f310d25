;; host_env: a permhost test plugin of ABI 1.5 that moves its input and
;; output only with permhost:host/env. It reads the whole input with one
;; input_read and answers with one output_write:
;;   {"outcome":"allow","reason":"<the input's last 8 bytes>"}
;; so that a test sees the bytes arrived where they belong. Markers
;; anywhere in the input change that:
;;   PASTEND!  input_read of one byte past the input's end (a trap)
;;   OUTSIDE!  output_write of a range past linear memory (a trap)
;;   HUGE!     output_write of 2 MiB (over the output limit)
;;   EMPTY!    output_write of 0 bytes (an empty output)
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "permhost:host/env" "input_read" (func $input_read (param i64 i32 i32)))
  (import "permhost:host/env" "output_write" (func $output_write (param i32 i32)))

  (memory (export "memory") 1)

  (data (i32.const 0) "{\"major\":1,\"minor\":5}")
  (data (i32.const 32) "{\"outcome\":\"allow\",\"reason\":\"")
  (data (i32.const 96) "PASTEND!")
  (data (i32.const 112) "OUTSIDE!")
  (data (i32.const 128) "HUGE!")
  (data (i32.const 144) "EMPTY!")

  ;; The input is read to $in (4096); the answer is built at 1024.
  (global $in i32 (i32.const 4096))
  (global $n (mut i32) (i32.const 0))

  (func $strlen (param $p i32) (result i32)
    (local $i i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (local.get $i))

  ;; $find reports whether the zero-terminated needle occurs in the input.
  (func $find (param $needle i32) (result i32)
    (local $l i32) (local $i i32) (local $j i32)
    (local.set $l (call $strlen (local.get $needle)))
    (block $notfound
      (loop $outer
        (br_if $notfound (i32.gt_u (i32.add (local.get $i) (local.get $l)) (global.get $n)))
        (local.set $j (i32.const 0))
        (block $mismatch
          (loop $inner
            (if (i32.eq (local.get $j) (local.get $l)) (then (return (i32.const 1))))
            (br_if $mismatch (i32.ne
              (i32.load8_u (i32.add (global.get $in) (i32.add (local.get $i) (local.get $j))))
              (i32.load8_u (i32.add (local.get $needle) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $inner)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (i32.const 0))

  (func (export "permhost_abi") (result i32)
    ;; The kernel's way, once: the handshake predates a plugin's choices.
    (local $b i64) (local $i i32) (local $l i32)
    (local.set $l (call $strlen (i32.const 0)))
    (local.set $b (call $alloc (i64.extend_i32_u (local.get $l))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $l)))
        (call $store_u8 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $output_set (local.get $b) (i64.extend_i32_u (local.get $l)))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (local $l i32)
    (global.set $n (i32.wrap_i64 (call $input_length)))
    ;; Requests in the tests fit in the page after $in.
    (if (i32.gt_u (global.get $n) (i32.const 60000)) (then unreachable))
    (call $input_read (i64.const 0) (global.get $in) (global.get $n))
    (if (call $find (i32.const 96))
      (then (call $input_read (i64.const 1) (global.get $in) (global.get $n))))
    (if (call $find (i32.const 112))
      (then (call $output_write (i32.const 65530) (i32.const 16)) (return (i32.const 0))))
    (if (call $find (i32.const 128))
      (then
        (drop (memory.grow (i32.const 32)))
        (call $output_write (i32.const 0) (i32.const 2097152))
        (return (i32.const 0))))
    (if (call $find (i32.const 144))
      (then (call $output_write (i32.const 0) (i32.const 0)) (return (i32.const 0))))
    ;; The answer: the prefix, the input's last 8 bytes, and "}.
    (local.set $l (call $strlen (i32.const 32)))
    (memory.copy (i32.const 1024) (i32.const 32) (local.get $l))
    (memory.copy (i32.add (i32.const 1024) (local.get $l))
      (i32.sub (i32.add (global.get $in) (global.get $n)) (i32.const 8)) (i32.const 8))
    (i32.store16 (i32.add (i32.const 1032) (local.get $l)) (i32.const 0x7d22))
    (call $output_write (i32.const 1024) (i32.add (local.get $l) (i32.const 10)))
    (i32.const 0))
)
