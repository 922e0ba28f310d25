// A standard-Go wasip1 module for the sandbox tests: work does what a real
// plugin does (decode and re-encode a request of about 1 KB); spin and sleep
// never return on their own.
package main

import (
	"encoding/json"
	"hash/crc32"
	"time"
)

var request = []byte(`{"abi":{"major":1,"minor":0},"decisionId":"d-42","session":{"id":"s-1","cwd":"/home/dev/project","mode":"default","agent":{"name":"claude-agent-acp","version":"0.10.0"}},"toolCall":{"id":"toolu_01","title":"rm -rf build && npm test","kind":"execute","status":"pending","rawInput":{"command":"rm -rf build && npm test","description":"Clean and test"}},"options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always","durable":true},{"optionId":"allow","name":"Allow","kind":"allow_once","durable":false},{"optionId":"reject","name":"Reject","kind":"reject_once","durable":false}],"shell":{"source":"rm -rf build && npm test","parsed":true,"commands":[{"argv":["rm","-rf","build"]},{"argv":["npm","test"]}]},"paths":[{"path":"/home/dev/project/build","access":"write","inCwd":true}],"config":{"rules":[{"kind":"execute","prefix":["npm","test"],"outcome":"allow"},{"kind":"execute","prefix":["rm","-rf"],"outcome":"ask"}]}}`)

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
