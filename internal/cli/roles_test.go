package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
)

// TestEtcdServeRefusesOtherReplicaKind: serve without --shard on a prefix
// that a shard member shares exits at start, saying why (it joined the
// prefix, led, and applied a revision the shards applied too: serials 9 and
// 10 of one revision); serve --shard exits while a replica without --shard
// leads. Neither writes a serial.
func TestEtcdServeRefusesOtherReplicaKind(t *testing.T) {
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/kinds")
	repo := quickstartRepo(t)
	_, e := openEtcdState(t, url, 5*time.Second)
	ctx := context.Background()
	serve := func(shard bool) (bool, error, string) {
		args := []string{"--state", url, "--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve", "--listen", "127.0.0.1:0", "--replica-id", "new"}
		if shard {
			args = append(args, "--shard")
		}
		cmd := fuelsyncCmd(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		exited, err := exitsWithin(t, cmd, 20*time.Second)
		return exited, err, stderr.String()
	}

	m, err := e.Join(ctx, "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	exited, err, stderr := serve(false)
	if !exited || err == nil || !strings.Contains(stderr, "refusing to run without --shard: the shards s1 (serve --shard) share the state") {
		t.Errorf("serve without --shard beside shard s1: exited %v (%v)\n%s", exited, err, stderr)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}

	lead, err := e.Campaign(ctx, "l1")
	if err != nil {
		t.Fatal(err)
	}
	defer lead.Resign(ctx)
	exited, err, stderr = serve(true)
	if !exited || err == nil || !strings.Contains(stderr, "refusing to run as a shard (serve --shard): replica l1 leads the state") {
		t.Errorf("serve --shard beside leader l1: exited %v (%v)\n%s", exited, err, stderr)
	}
	if serial, err := e.CommittedSerial(ctx); err != nil || serial != 0 {
		t.Errorf("a serial was committed: %d, %v", serial, err)
	}
}
