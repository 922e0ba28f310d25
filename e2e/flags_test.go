package e2e

import "flag"

// update rewrites golden files under testdata/ instead of comparing.
var update = flag.Bool("update", false, "rewrite golden files")
