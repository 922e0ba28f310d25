package acptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// SDKPackage is the npm package whose example agent SDKAgent runs.
const SDKPackage = "@agentclientprotocol/sdk@0.17.0"

// sdkAgentScript is the example agent inside an npm prefix.
const sdkAgentScript = "node_modules/@agentclientprotocol/sdk/dist/examples/agent.js"

// SDKAgent returns the command line that runs the example agent of the ACP
// TypeScript SDK (SDKPackage) with node. The package is installed with npm
// once per checkout into <repo>/build/npm/sdk-0.17.0 and reused afterwards;
// concurrent installs are safe (each installs into its own directory and the
// first rename wins). Without node the test is skipped; if npm fails (say,
// offline on a fresh checkout) the test fails with npm's output.
func SDKAgent(t testing.TB) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("acptest: node not found in PATH; the ACP SDK example agent needs Node.js: %v", err)
	}
	dir := filepath.Join(RepoRoot(t), "build", "npm", "sdk-0.17.0")
	script := filepath.Join(dir, sdkAgentScript)
	if _, err := os.Stat(script); err == nil {
		return []string{node, script}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("acptest: node is installed but npm is not; it is needed once to install %s: %v", SDKPackage, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "sdk-0.17.0.tmp"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone once renamed; otherwise a loser's leftovers
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", SDKPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("acptest: npm install %s failed: %v\n%s", SDKPackage, err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, sdkAgentScript)); err != nil {
		t.Fatalf("acptest: npm installed %s but %s is missing: %v", SDKPackage, sdkAgentScript, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have finished first; its copy is as good.
		if _, statErr := os.Stat(script); statErr != nil {
			t.Fatalf("acptest: installing %s into %s: %v", SDKPackage, dir, err)
		}
	}
	return []string{node, script}
}
