;; endless_init: a plugin whose _initialize (the reactor start function) never
;; returns, so that loading it lasts until the loader gives up: the init
;; budget runs out or the engine closes. policy's tests use it to close an
;; engine while a plugin is still loading. Made with
;; `wat2wasm endless_init.wat` (Debian wabt).
(module
  (memory (export "memory") 1)
  (func (export "_initialize")
    (loop $forever (br $forever)))
  (func (export "permhost_abi") (result i32)
    unreachable)
  (func (export "permhost_decide") (result i32)
    unreachable))
