;; fd_write_iovecs: fd_write to stdout with a million iovecs, each 32 KiB
;; of the same memory, in a loop. wazero's fd_write passed each to the
;; writer, which scanned it: one call kept a core busy for minutes past the
;; deadline. The sandbox refuses more than 1024 iovecs (EINVAL, as writev
;; does) and writes at most 1 MiB per call; the loop then runs into the
;; deadline like any loop.
;; Expected: timeout, at the deadline.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  ;; 8 MiB for the iovecs (a million of 8 bytes) and their 32 KiB of data.
  (memory (export "memory") 129)

  (data (i32.const 0) "{\"major\":1,\"minor\":0}")

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

  (func (export "permhost_abi") (result i32)
    (call $output (i32.const 0))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (local $i i32)
    ;; iovec i at 65536 + 8i: {offset 1024, length 32768}
    (loop $fill
      (i32.store (i32.add (i32.const 65536) (i32.shl (local.get $i) (i32.const 3))) (i32.const 1024))
      (i32.store (i32.add (i32.const 65540) (i32.shl (local.get $i) (i32.const 3))) (i32.const 32768))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 1000000))))
    (loop $write
      (drop (call $fd_write (i32.const 1) (i32.const 65536) (i32.const 1000000) (i32.const 512)))
      ;; and the most the sandbox takes at once: 1024 iovecs, 32 MiB
      (drop (call $fd_write (i32.const 1) (i32.const 65536) (i32.const 1024) (i32.const 512)))
      (br $write))
    unreachable))
