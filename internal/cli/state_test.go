package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
)

// fuelsyncRun runs the CLI in-process and returns its exit code and output.
func fuelsyncRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"fuelsync"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// A state moves from the work directory to etcd with state pull and push;
// plan and apply then work over etcd; a push of another lineage is refused.
func TestEtcdStatePushPull(t *testing.T) {
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/test")
	repo, clusterFile, a, b := applyRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	base := []string{"--repo", repo, "--workdir", wd}
	etcd := append([]string{"--state", url}, base...)

	if code, _, stderr := fuelsyncRun(t, append(base, "apply", "--auto-approve")...); code != 0 {
		t.Fatalf("apply into the work directory: exit %d\n%s", code, stderr)
	}
	code, pulled, stderr := fuelsyncRun(t, append(base, "state", "pull")...)
	if code != 0 || !strings.Contains(pulled, `"serial": 1`) {
		t.Fatalf("state pull: exit %d\n%s%s", code, pulled, stderr)
	}
	stateFile := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(stateFile, []byte(pulled), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := fuelsyncRun(t, append(etcd, "plan", "--reinit")...); code != 1 || !strings.Contains(stderr, "--reinit starts the work directory's own state over") {
		t.Fatalf("plan --reinit over etcd: exit %d\n%s", code, stderr)
	}
	// Over etcd, nothing is stored yet.
	if code, out, _ := fuelsyncRun(t, append(etcd, "state", "show")...); code != 0 || !strings.Contains(out, "Nothing applied yet") {
		t.Fatalf("state show of an empty etcd: exit %d\n%s", code, out)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "state", "push", stateFile)...); code != 0 || !strings.Contains(out, "Pushed serial 1") {
		t.Fatalf("state push to etcd: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "state", "push", stateFile, "--format", "json")...); code != 0 || !strings.Contains(out, `"changed": false`) || !strings.Contains(out, `"serial": 1`) {
		t.Fatalf("state push --format json of the same state: exit %d\n%s%s", code, out, stderr)
	}
	// From a work directory without the applied set (another machine's, or
	// none), state show says where the set is instead of a path that does
	// not exist.
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if code, out, stderr := fuelsyncRun(t, "--state", url, "--repo", repo, "--workdir", elsewhere, "state", "show"); !strings.Contains(out, "(not in "+elsewhere+")\n") || code != 0 {
		t.Errorf("state show over etcd from another work directory: exit %d\n%s%s\nwant it to say the set is not in %s", code, out, stderr, elsewhere)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "state", "push", stateFile)...); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("state push of the same state: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ := fuelsyncRun(t, append(etcd, "state", "show")...)
	if code != 0 || !strings.Contains(out, "State:        "+url) || !strings.Contains(out, "Serial:       1") {
		t.Fatalf("state show over etcd: exit %d\n%s", code, out)
	}
	// plan reads the state on etcd and the artifacts in the work directory.
	if code, out, stderr := fuelsyncRun(t, append(etcd, "plan", "--detailed-exitcode")...); code != 0 {
		t.Fatalf("plan over etcd after the push: exit %d (want 0: no changes)\n%s%s", code, out, stderr)
	}
	if err := os.WriteFile(clusterFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "apply", "--auto-approve")...); code != 0 || !strings.Contains(out, "serial 2") {
		t.Fatalf("apply over etcd: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := fuelsyncRun(t, append(etcd, "state", "show", "--format", "json")...); code != 0 || !strings.Contains(out, `"serial": 2`) {
		t.Fatalf("state show --format json after the apply: exit %d\n%s", code, out)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "plan", "--detailed-exitcode")...); code != 0 {
		t.Fatalf("plan over etcd after the apply: exit %d (want 0)\n%s%s", code, out, stderr)
	}

	// A plan saved over etcd is stale once another apply moved the state there.
	if err := os.WriteFile(clusterFile, a, 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if code, out, stderr := fuelsyncRun(t, append(etcd, "plan", "--out", planFile)...); code != 0 {
		t.Fatalf("plan --out over etcd: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "apply", "--auto-approve")...); code != 0 || !strings.Contains(out, "serial 3") {
		t.Fatalf("apply over etcd: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(etcd, "apply", planFile)...); code != 1 || !strings.Contains(stderr, "the state is now at serial 3") {
		t.Fatalf("apply of a stale plan over etcd: exit %d\n%s%s", code, out, stderr)
	}

	// Another work directory's state (a new lineage) is refused.
	other := filepath.Join(t.TempDir(), "other")
	if code, _, stderr := fuelsyncRun(t, "--repo", repo, "--workdir", other, "apply", "--auto-approve"); code != 0 {
		t.Fatalf("apply into another work directory: exit %d\n%s", code, stderr)
	}
	_, otherState, _ := fuelsyncRun(t, "--repo", repo, "--workdir", other, "state", "pull")
	otherFile := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(otherFile, []byte(otherState), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = fuelsyncRun(t, append(etcd, "state", "push", otherFile)...)
	if code != 1 || !strings.Contains(stderr, "refusing to push") || !strings.Contains(stderr, "lineage") {
		t.Fatalf("push of another lineage: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := fuelsyncRun(t, append(etcd, "state", "show")...); !strings.Contains(out, "Serial:       3") {
		t.Fatalf("the state after the refused push: exit %d\n%s", code, out)
	}
	// And back: etcd's state pushed into a work directory that has its set.
	_, fromEtcd, _ := fuelsyncRun(t, append(etcd, "state", "pull")...)
	if err := os.WriteFile(stateFile, []byte(fromEtcd), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := fuelsyncRun(t, append(base, "state", "push", stateFile)...); code != 0 {
		t.Fatalf("push back into the work directory: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(base, "plan", "--detailed-exitcode")...); code != 0 {
		t.Fatalf("plan in the work directory after the push back: exit %d (want 0)\n%s%s", code, out, stderr)
	}
}

// --etcd-cacert/--etcd-cert/--etcd-key reach an etcd that requires client
// certificates; --etcd-auth-file logs in once etcd's authentication is on.
func TestEtcdTLSAndAuth(t *testing.T) {
	dir := t.TempDir()
	certs := etcdtest.NewCerts(t, dir)
	c := etcdtest.StartTLS(t, certs)
	repo, _, _, _ := applyRepo(t)
	args := []string{"--state", c.URL("secure"), "--repo", repo, "--workdir", filepath.Join(dir, "wd"),
		"--etcd-cacert", certs.CA, "--etcd-cert", certs.ClientCert, "--etcd-key", certs.ClientKey}
	if code, out, stderr := fuelsyncRun(t, append(args, "state", "show")...); code != 0 || !strings.Contains(out, "Nothing applied yet") {
		t.Fatalf("state show over TLS: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := fuelsyncRun(t, append(args[:len(args)-2:len(args)-2], "state", "show")...); code != 1 || !strings.Contains(stderr, "--etcd-cert and --etcd-key go together") {
		t.Fatalf("--etcd-cert without --etcd-key: exit %d\n%s", code, stderr)
	}

	// Authentication on: a root user with a password.
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(certs.CA)
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong")
	good := filepath.Join(dir, "auth")
	os.WriteFile(wrong, []byte("root:nope\n"), 0o600)
	os.WriteFile(good, []byte("root:s3cret\n"), 0o600)
	if code, _, stderr := fuelsyncRun(t, append(args, "--etcd-auth-file", wrong, "state", "show")...); code != 1 || !strings.Contains(stderr, "authentication failed") {
		t.Fatalf("a wrong password: exit %d\n%s", code, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(args, "--etcd-auth-file", good, "apply", "--auto-approve")...); code != 0 || !strings.Contains(out, "serial 1") {
		t.Fatalf("apply over TLS with a password: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := fuelsyncRun(t, append(args, "--etcd-auth-file", good, "state", "show")...); code != 0 || !strings.Contains(out, "Serial:       1") {
		t.Fatalf("state show after the apply: exit %d\n%s%s", code, out, stderr)
	}
}
