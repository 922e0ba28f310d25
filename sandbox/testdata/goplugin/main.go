// A standard-Go wasip1 module for the sandbox tests: work does what a real
// plugin does (decode and re-encode request.json, about 1 KB, n times, and
// sum the CRC-32s; the test computes the same natively); spin and sleep
// never return on their own.
package main

import (
	_ "embed"
	"encoding/json"
	"hash/crc32"
	"time"
)

//go:embed request.json
var request []byte

//go:wasmexport work
func work(n int32) int32 {
	var sum uint32
	for i := int32(0); i < n; i++ {
		var v map[string]any
		if err := json.Unmarshal(request, &v); err != nil {
			panic(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		sum += crc32.ChecksumIEEE(b)
	}
	return int32(sum)
}

var sink int

//go:wasmexport spin
func spin() {
	for i := 0; ; i++ {
		sink = i
	}
}

//go:wasmexport sleep
func sleep() {
	time.Sleep(time.Hour)
}

func main() {}
