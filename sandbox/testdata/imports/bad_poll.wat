(module (import "permhost:sandbox" "poll" (func (param i32) (result i32))))
