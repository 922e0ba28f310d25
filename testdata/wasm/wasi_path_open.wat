;; wasi_path_open: tries to open /etc/passwd for reading through WASI, relative
;; to fd 3 (the first preopened directory, when one is granted). With nothing
;; granted path_open must fail; the plugin reports the errno it got.
;; Expected: a decision, abstain with reason "path_open errno NN", NN not 00
;; (00 would mean the file was opened).
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))

  (memory (export "memory") 1)

  ;; Strings end at the first zero byte (memory starts zeroed).
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 256) "/etc/passwd")
  (data (i32.const 512) "{\"outcome\":\"abstain\",\"reason\":\"path_open errno 00\"}")

  ;; $output copies the zero-terminated string at ptr into a fresh Extism
  ;; block and makes it the call's output. (The same helper is in every
  ;; fixture, so that each one stands alone.)
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
    (local $errno i32)
    (local.set $errno
      (call $path_open
        (i32.const 3)           ;; fd: first preopen
        (i32.const 0)           ;; dirflags
        (i32.const 256)         ;; path
        (i32.const 11)          ;; path length: "/etc/passwd"
        (i32.const 0)           ;; oflags
        (i64.const 2)           ;; rights: fd_read
        (i64.const 0)           ;; inheriting rights
        (i32.const 0)           ;; fdflags
        (i32.const 384)))       ;; where the opened fd goes
    ;; WASI errnos are below 100: two decimal digits.
    (i32.store8 (i32.const 559)
      (i32.add (i32.const 48) (i32.rem_u (i32.div_u (local.get $errno) (i32.const 10)) (i32.const 10))))
    (i32.store8 (i32.const 560)
      (i32.add (i32.const 48) (i32.rem_u (local.get $errno) (i32.const 10))))
    (call $output (i32.const 512))
    (i32.const 0)))
