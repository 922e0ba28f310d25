(module (import "env" "memory" (memory 1)))
