package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestMakeDemo runs `make demo` (this test binary as bin/fuelsync, its scratch
// output in a temporary directory): it succeeds, tours all three examples, and its
// apply step prints what it applied.
func TestMakeDemo(t *testing.T) {
	for _, tool := range []string{"make", "sed", "mktemp"} {
		testenv.Tool(t, tool, "make demo needs it: apt-get install make sed coreutils")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fuelsync")
	writeBinaries(t, dir)
	// -o build: the test binary is the build.
	cmd := exec.Command("make", "--no-print-directory", "-C", filepath.Join("..", ".."), "-o", "build", "demo",
		"BIN="+bin, "DEMO="+filepath.Join(dir, "demo"))
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		`(?m)^== fuelsync --repo examples/quickstart validate$`,
		`(?m)^examples/quickstart: valid: `,
		`(?m)^quickstart/plugins/monitoring/metadata.yaml:\d+:\d+: error: `, // a scratch copy with a mistake
		`(?m)^exit status 1$`,
		`(?m)^Apply complete: serial 1, `, // apply shows its own output
		`(?m)^examples/fuel-mitaka: valid: `,
		`(?m)^== fuelsync --repo examples/fuel-mitaka explain `,
		`(?m)^  OS::TripleO::Services::RabbitMQ: tht/puppet/services/rabbitmq.yaml$`,
		`(?m)^  OS::TripleO::Services::RabbitMQ: tht/docker/services/pacemaker/rabbitmq.yaml$`,
		`(?m)^examples/tripleo-capabilities/tht/docker/services/pacemaker/rabbitmq.yaml$`, // capabilities find
		`(?m)^deployment: puppet, docker$`,                                                // capabilities summary
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("make demo prints nothing matching %s", want)
		}
	}
	if t.Failed() {
		t.Logf("make demo:\n%s", out)
	}
}

// TestMakeInstall runs `make install PREFIX=DIR` (this test binary as the
// build): both binaries land in DIR/bin, mode 0755, and run from there.
func TestMakeInstall(t *testing.T) {
	testenv.Tool(t, "make", "make install needs it: apt-get install make")
	built := t.TempDir()
	writeBinaries(t, built)
	for _, name := range []string{"fuelsync", ServerBinary, agentBinary} { // install sets the mode
		if err := os.Chmod(filepath.Join(built, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	prefix := filepath.Join(t.TempDir(), "home", ".local")
	// -o build: the test binary is the build.
	cmd := exec.Command("make", "--no-print-directory", "-C", filepath.Join("..", ".."), "-o", "build", "install",
		"BIN="+filepath.Join(built, "fuelsync"), "PREFIX="+prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, name := range []string{"fuelsync", ServerBinary, agentBinary} {
		p := filepath.Join(prefix, "bin", name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", p, fi.Mode())
		}
		if out, err := exec.Command(p, "version").CombinedOutput(); err != nil || !regexp.MustCompile(`(?m)^`+name+` `).Match(out) {
			t.Errorf("%s version: %v\n%s", p, err, out)
		}
	}
}
