package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pxCorpus is one direction's transparency corpus: every kind of line an
// editor or agent may send that the proxy must pass on untouched.
func pxCorpus(side string) []byte {
	big := strings.Repeat("QUJD", 16<<20) // 64 MiB of base64
	lines := []string{
		`{"jsonrpc":"2.0","method":"_zed/custom","params":{"_meta":{"traceparent":"00-abc","vendor":{"k":[1,2]}},"x":1}}` + "\n",
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":42,"_meta":null}}` + "\n",
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"_vendor_thing","n":9007199254740993,"f":1.0e+400}},"futureField":true}` + "\n",
		`{"jsonrpc":"2.0","method":"_x","params":{"text":"héllo 世界 🎉 <&> \u00e9 \/ \"q\""}}` + "\n",
		"{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"params\":{\"bad\":\"\xff\xfe\xc3\"}}\n",
		`[{"jsonrpc":"2.0","method":"_a"},{"jsonrpc":"2.0","method":"_b","params":{"z":[]}}]` + "\n",
		"this is not JSON at all\n",
		`{"jsonrpc":"2.0","method":"_crlf"}` + "\r\n",
		"\n",
		"   \t \n",
		`{ "method" : "session/update" , "jsonrpc" : "2.0" , "params" : { "sessionId" : "s" , "update" : { "sessionUpdate" : "plan" , "entries" : [ ] } } }` + "\n",
		`{"jsonrpc":"1.0","weird":"not json-rpc 2"}` + "\n",
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"` + big + `"}}}}` + "\n",
	}
	switch side {
	case "client":
		lines = append(lines,
			`{"jsonrpc":"2.0","id":9007199254740993,"method":"session/set_model","params":{"sessionId":"s","modelId":"opus","big":123456789012345678901234567890}}`+"\n",
			`{"id":"req-é","method":"_vendor/ask","jsonrpc":"2.0","params":{"_meta":{"a":{"b":{"c":null}}}}}`+"\n",
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`+"\n",
			`{"jsonrpc":"2.0","id":77,"result":{"content":"file text","_meta":{}}}`+"\n",
			`{"jsonrpc":"2.0","method":"_last","params":{"no":"newline"}}`)
	case "agent":
		lines = append(lines,
			`{"id":9007199254740993,"jsonrpc":"2.0","result":{"_meta":{"x":12345678901234567890}}}`+"\n",
			`{"jsonrpc":"2.0","id":"req-é","error":{"code":-32601,"message":"Method not found","data":{"m":"_vendor/ask"}}}`+"\n",
			`{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a","line":1}}`+"\n",
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","rawInput":{"n":12345678901234567890}}}}`+"\n",
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}}`+"\n",
			`{"jsonrpc":"2.0","method":"_last","params":{"no":"newline"}}`)
	}
	return []byte(strings.Join(lines, ""))
}

func TestProxyTransparency(t *testing.T) {
	dir := t.TempDir()
	clientCorpus, agentCorpus := pxCorpus("client"), pxCorpus("agent")
	emit := filepath.Join(dir, "emit")
	record := filepath.Join(dir, "record")
	if err := os.WriteFile(emit, agentCorpus, 0o600); err != nil {
		t.Fatal(err)
	}
	// The agent sends its 64 MiB after the editor closed stdin: give it time.
	cmd, stderr := pxCommand(t, []string{"--shutdown-grace", "2m"}, "transparent", record, emit)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		stdin.Write(clientCorpus)
		stdin.Close()
	}()
	got, err := io.ReadAll(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if code := pxWaitExit(t, cmd, 60*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	recorded, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	pxSameBytes(t, "agent→client", got, agentCorpus)
	pxSameBytes(t, "client→agent", recorded, clientCorpus)
	if !strings.Contains(stderr.String(), "not a JSON-RPC message") {
		t.Errorf("non-JSON lines were not logged; stderr:\n%s", stderr)
	}
}

func pxSameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-60)
	t.Fatalf("%s: %d bytes, want %d; first difference at %d:\n got …%q…\nwant …%q…", what, len(got), len(want), i,
		got[lo:min(len(got), i+60)], want[lo:min(len(want), i+60)])
}

// TestProxyOrdering: a notification followed by a request arrives in that
// order, 1,000 times under load, and every answer gets back.
func TestProxyOrdering(t *testing.T) {
	const n = 1000
	cmd, stderr := pxCommand(t, nil, "ordering", fmt.Sprint(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	answers := make(chan string, n)
	go func() {
		for a := range answers {
			io.WriteString(stdin, a)
		}
		stdin.Close()
	}()
	// Every line keeps its place, except that an intercepted permission
	// request may come later — but never before its tool_call.
	nextUpdate := 0
	for range 2 * n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d updates: %v; stderr:\n%s", nextUpdate, err, stderr)
		}
		var i int
		switch {
		case strings.Contains(line, `"sessionUpdate":"tool_call"`):
			if !strings.Contains(line, fmt.Sprintf(`"toolCallId":"t%d"`, nextUpdate)) {
				t.Fatalf("update out of order, want t%d: %s", nextUpdate, line)
			}
			nextUpdate++
		case strings.Contains(line, "fs/read_text_file"):
			if want := fmt.Sprintf(`"id":"r%d"`, nextUpdate-1); !strings.Contains(line, want) {
				t.Fatalf("fs request out of order, want %s right after its update: %s", want, line)
			}
		default:
			if _, err := fmt.Sscanf(line, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission"`, &i); err != nil {
				t.Fatalf("unexpected line %q", line)
			}
			if i >= nextUpdate {
				t.Fatalf("permission request %d before its tool_call", i)
			}
			answers <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}`+"\n", i)
		}
	}
	close(answers)
	io.Copy(io.Discard, r)
	if code := pxWaitExit(t, cmd, 30*time.Second); code != 0 {
		t.Fatalf("the agent did not get every answer unchanged: exit %d; stderr:\n%s", code, stderr)
	}
}
