package host

// WaitAbandonedCompiles waits for the compiles Load gave up on to finish,
// for tests that check nothing is left running.
func WaitAbandonedCompiles() { abandonedCompiles.Wait() }
