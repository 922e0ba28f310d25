;; Provides the imported global of features.wat.
(module (global (export "g") i32 (i32.const 5)))
