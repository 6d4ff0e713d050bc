package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"

	"github.com/urfave/cli/v2"
)

// The CLI is built as two binaries. fuelsync links every command but not the
// etcd client (with gRPC and protobuf) nor the Prometheus client, whose inits
// would double the start-up time of every command, shell completion included.
// fuelsync-server links them besides, and registers them with the state and server packages. A
// command that needs one of them (serve; any command with the state on etcd)
// is handed by fuelsync to fuelsync-server, with the same arguments, as git
// hands git-foo its subcommand: fuelsync-server is looked up beside fuelsync's
// own executable first, then on PATH, and on Unix replaces the fuelsync
// process (the same pid, signals, stdin/stdout/stderr and exit status).

// ServerBinary is the name of the binary that serves.
const ServerBinary = "fuelsync-server"

// argsKey is the app's Metadata key of the command line as given.
const argsKey = "args"

// dispatchedEnv is set in the environment of a dispatched fuelsync-server, to
// the identity (version and commit) of the fuelsync that hands it the command:
// a server of another build refuses the command (two builds may differ in any
// flag, output or the work directory's format), and a binary which lacks what
// it was dispatched for refuses instead of dispatching again. Main takes it
// out of the environment (into dispatched), so that the processes the server
// starts (hooks running fuelsync) do not inherit it.
const dispatchedEnv = "FUELSYNC_DISPATCHED"

// dispatched says this process was started by a dispatch.
var dispatched bool

// identity is what must be the same in fuelsync and the fuelsync-server it
// hands a command to: the version and the commit. Two builds that know
// neither ("dev", commit "unknown": go build -buildvcs=false without
// -ldflags) are taken to match: nothing tells them apart.
func identity() string { return version + " (commit " + commit + ")" }

// takeDispatched reads dispatchedEnv into dispatched and unsets it; a
// fuelsync of another build than this one is refused (exit status 2).
func takeDispatched() *exitError {
	from, ok := os.LookupEnv(dispatchedEnv)
	if !ok || from == "" {
		return nil
	}
	dispatched = true
	os.Unsetenv(dispatchedEnv)
	if from == identity() {
		return nil
	}
	if from == "1" { // a fuelsync older than the check
		from = "of an older version"
	}
	self, err := os.Executable()
	if err != nil {
		self = ServerBinary
	}
	return &exitError{code: 2, msg: fmt.Sprintf("fuelsync %s handed its command to %s, which is %s %s: "+
		"install the two binaries of one version (%s)", from, self, ServerBinary, identity(), installHint())}
}

// dispatch runs the command line of c in fuelsync-server, for what (what
// needs it: "serve", "the state on etcd"). It returns only when that cannot be
// done (on Unix; elsewhere when the server exited, its exit status in the
// error): fuelsync-server is missing (exit status 2), or this is a
// fuelsync-server already.
func dispatch(c *cli.Context, what string) error {
	args, _ := c.App.Metadata[argsKey].([]string)
	if len(args) == 0 {
		args = os.Args
	}
	if dispatched {
		return &exitError{code: 2, msg: fmt.Sprintf("%s: this %s was built without what it needs (the etcd backend, the Prometheus metrics)", what, ServerBinary)}
	}
	bin, err := findServer()
	if err != nil {
		return &exitError{code: 2, msg: fmt.Sprintf("%s needs the %s binary beside fuelsync or on PATH: install the two binaries of one version (%s)",
			what, ServerBinary, installHint())}
	}
	env := append(os.Environ(), dispatchedEnv+"="+identity())
	return execServer(bin, append([]string{bin}, args[1:]...), env)
}

// findServer returns the path of fuelsync-server: beside this executable
// (symbolic links followed), else on PATH.
func findServer() (string, error) {
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		p := filepath.Join(filepath.Dir(self), ServerBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(ServerBinary)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		return filepath.Abs(p)
	}
	return p, nil
}

var releaseVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v\d+\.\d+\.\d+$`) })

// installHint says where both binaries of one build come from: a release
// archive of make release holds both (this build's, named, when it is a
// release); from a clone, make install or go install ./cmd/... builds both.
// (Not go install MODULE@latest: the module need not be on a module proxy.)
func installHint() string {
	archive := "a release archive of make release holds both"
	if releaseVersion().MatchString(version) {
		archive = fmt.Sprintf("the release archive fuelsync-%s-%s-%s.tar.gz holds both", version, runtime.GOOS, runtime.GOARCH)
	}
	return archive + "; from a clone: make install PREFIX=DIR, or go install ./cmd/..."
}
