;; echo: a permhost test plugin that exercises the Extism kernel. It reads the
;; whole input (input_load_u64 for 8-byte chunks, input_load_u8 for the
;; rest) and answers {"outcome":"allow","reason":"<decisionId>"}, so that a
;; test can tell whose answer it got. Markers anywhere in the input change
;; that:
;;   TRAP!   unreachable
;;   ERRSET! error_set("echo: asked to fail") and return 1
;;   LOG!    log_info("echo: logged") before answering
;;   VAR!    var_set("k","v1") then var_get("k"): the reason is the value
;;   PEEK!   var_get("k"): the reason is the value, or "-" if none
;;   CONFIG! config_get("mode"): the reason is the value, or "-" if none
;;   NET!    http_request, which must fail
;;   SPIN!   loop forever
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))

  (memory (export "memory") 1)

  ;; Zero-terminated strings.
  (data (i32.const 0) "{\"major\":1,\"minor\":0}")
  (data (i32.const 32) "{\"outcome\":\"allow\",\"reason\":\"")
  (data (i32.const 64) "\"}")
  (data (i32.const 72) "\"decisionId\":\"")
  (data (i32.const 96) "TRAP!")
  (data (i32.const 104) "ERRSET!")
  (data (i32.const 112) "LOG!")
  (data (i32.const 120) "VAR!")
  (data (i32.const 128) "CONFIG!")
  (data (i32.const 136) "NET!")
  (data (i32.const 144) "SPIN!")
  (data (i32.const 160) "echo: asked to fail")
  (data (i32.const 192) "echo: logged")
  (data (i32.const 208) "k")
  (data (i32.const 216) "v1")
  (data (i32.const 224) "mode")
  (data (i32.const 232) "-")
  (data (i32.const 240) "{\"url\":\"http://example.com\"}")
  (data (i32.const 272) "PEEK!")

  ;; The input is copied to $in (4096); the answer is built at $out (2048).
  (global $in i32 (i32.const 4096))
  (global $n (mut i32) (i32.const 0))
  (global $len (mut i32) (i32.const 0))

  (func $strlen (param $p i32) (result i32)
    (local $i i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (local.get $i))

  ;; $block copies len bytes at p into a new Extism block.
  (func $block (param $p i32) (param $len i32) (result i64)
    (local $b i64) (local $i i32)
    (local.set $b (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy8
        (br_if $done (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $len)))
        (call $store_u64 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))
          (i64.load (i32.add (local.get $p) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $copy8)))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $p) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (local.get $b))

  (func $cstr (param $p i32) (result i64)
    (call $block (local.get $p) (call $strlen (local.get $p))))

  ;; $load copies Extism block b to p and returns its length.
  (func $load (param $b i64) (param $p i32) (result i32)
    (local $n i32) (local $i i32)
    (local.set $n (i32.wrap_i64 (call $length (local.get $b))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store8 (i32.add (local.get $p) (local.get $i))
          (call $load_u8 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (local.get $n))

  ;; $append adds the zero-terminated string at p to the answer.
  (func $append (param $p i32)
    (local $l i32)
    (local.set $l (call $strlen (local.get $p)))
    (memory.copy (i32.add (i32.const 2048) (global.get $len)) (local.get $p) (local.get $l))
    (global.set $len (i32.add (global.get $len) (local.get $l))))

  (func $read_input
    (local $i i32) (local $pages i32)
    (global.set $n (i32.wrap_i64 (call $input_length)))
    (local.set $pages (i32.add (i32.shr_u (i32.add (global.get $in) (global.get $n)) (i32.const 16)) (i32.const 1)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then (drop (memory.grow (i32.sub (local.get $pages) (memory.size))))))
    (block $done
      (loop $copy8
        (br_if $done (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (global.get $n)))
        (i64.store (i32.add (global.get $in) (local.get $i))
          (call $input_load_u64 (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $copy8)))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (global.get $n)))
        (i32.store8 (i32.add (global.get $in) (local.get $i))
          (call $input_load_u8 (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy))))

  ;; $find returns the offset in the input just past the first occurrence
  ;; of the zero-terminated needle, or -1.
  (func $find (param $needle i32) (result i32)
    (local $l i32) (local $i i32) (local $j i32)
    (local.set $l (call $strlen (local.get $needle)))
    (block $notfound
      (loop $outer
        (br_if $notfound (i32.gt_u (i32.add (local.get $i) (local.get $l)) (global.get $n)))
        (local.set $j (i32.const 0))
        (block $mismatch
          (loop $inner
            (if (i32.eq (local.get $j) (local.get $l))
              (then (return (i32.add (local.get $i) (local.get $l)))))
            (br_if $mismatch (i32.ne
              (i32.load8_u (i32.add (global.get $in) (i32.add (local.get $i) (local.get $j))))
              (i32.load8_u (i32.add (local.get $needle) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $inner)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (i32.const -1))

  (func $finish (result i32)
    (local $b i64)
    (call $append (i32.const 64))
    (local.set $b (call $block (i32.const 2048) (global.get $len)))
    (call $output_set (local.get $b) (i64.extend_i32_u (global.get $len)))
    (i32.const 0))

  (func (export "permhost_abi") (result i32)
    (local $b i64)
    (local.set $b (call $cstr (i32.const 0)))
    (call $output_set (local.get $b) (call $length (local.get $b)))
    (i32.const 0))

  (func (export "permhost_decide") (result i32)
    (local $at i32) (local $end i32) (local $b i64) (local $l i32)
    (global.set $len (i32.const 0))
    (call $read_input)
    (if (i32.ge_s (call $find (i32.const 96)) (i32.const 0)) (then unreachable))
    (if (i32.ge_s (call $find (i32.const 144)) (i32.const 0))
      (then (loop $spin (br $spin))))
    (if (i32.ge_s (call $find (i32.const 104)) (i32.const 0))
      (then
        (call $error_set (call $cstr (i32.const 160)))
        (return (i32.const 1))))
    (if (i32.ge_s (call $find (i32.const 136)) (i32.const 0))
      (then (drop (call $http_request (call $cstr (i32.const 240)) (i64.const 0)))))
    (if (i32.ge_s (call $find (i32.const 112)) (i32.const 0))
      (then (call $log_info (call $cstr (i32.const 192)))))
    (call $append (i32.const 32))
    (if (i32.ge_s (call $find (i32.const 120)) (i32.const 0))
      (then
        (call $var_set (call $cstr (i32.const 208)) (call $cstr (i32.const 216)))
        (local.set $l (call $load (call $var_get (call $cstr (i32.const 208))) (i32.add (i32.const 2048) (global.get $len))))
        (global.set $len (i32.add (global.get $len) (local.get $l)))
        (return (call $finish))))
    (if (i32.ge_s (call $find (i32.const 272)) (i32.const 0))
      (then
        (local.set $b (call $var_get (call $cstr (i32.const 208))))
        (if (i64.eqz (local.get $b))
          (then (call $append (i32.const 232)))
          (else
            (local.set $l (call $load (local.get $b) (i32.add (i32.const 2048) (global.get $len))))
            (global.set $len (i32.add (global.get $len) (local.get $l)))))
        (return (call $finish))))
    (if (i32.ge_s (call $find (i32.const 128)) (i32.const 0))
      (then
        (local.set $b (call $config_get (call $cstr (i32.const 224))))
        (if (i64.eqz (local.get $b))
          (then (call $append (i32.const 232)))
          (else
            (local.set $l (call $load (local.get $b) (i32.add (i32.const 2048) (global.get $len))))
            (global.set $len (i32.add (global.get $len) (local.get $l)))))
        (return (call $finish))))
    ;; Copy the decisionId value up to its closing quote.
    (local.set $at (call $find (i32.const 72)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then
        (local.set $end (local.get $at))
        (block $done
          (loop $scan
            (br_if $done (i32.ge_u (local.get $end) (global.get $n)))
            (br_if $done (i32.eq (i32.load8_u (i32.add (global.get $in) (local.get $end))) (i32.const 34)))
            (local.set $end (i32.add (local.get $end) (i32.const 1)))
            (br $scan)))
        (memory.copy (i32.add (i32.const 2048) (global.get $len))
          (i32.add (global.get $in) (local.get $at))
          (i32.sub (local.get $end) (local.get $at)))
        (global.set $len (i32.add (global.get $len) (i32.sub (local.get $end) (local.get $at))))))
    (call $finish)))
