;; empty_logs: permhost_decide writes "\n" to stdout one million times (an
;; empty log entry each: a stream write ending its line makes one entry,
;; without the newline), then abstains. An entry costs more than its
;; message: the host charges each a fixed overhead against the log limit,
;; so that empty entries cannot pile up by the million.
;; Expected: a decision (abstain, reason "wrote 1000000 empty lines") with at
;; most MaxLogBytes/33 entries kept (each costs 32 bytes and its newline) and
;; a warn entry counting the rest, under a generous deadline.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  ;; Strings end at the first zero byte (memory starts zeroed).
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 64) "{\"outcome\":\"abstain\",\"reason\":\"wrote 1000000 empty lines\"}")
  ;; The iovec at 256: {buf 272, len 1}; the newline at 272.
  (data (i32.const 256) "\10\01\00\00\01\00\00\00")
  (data (i32.const 272) "\n")

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
    (loop $lines
      ;; fd_write(stdout, iovs 256, 1 iovec, nwritten at 288)
      (drop (call $fd_write (i32.const 1) (i32.const 256) (i32.const 1) (i32.const 288)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $lines (i32.lt_u (local.get $i) (i32.const 1000000))))
    (call $output (i32.const 64))
    (i32.const 0)))
