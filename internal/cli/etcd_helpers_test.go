package cli

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fuelsync/fuelsync/etcdstate"
	"github.com/fuelsync/fuelsync/state"
)

// openEtcdState opens the state on etcd at url (a test's prefix) with the
// given timeout; it is closed when the test ends.
func openEtcdState(t testing.TB, url string, timeout time.Duration) (*state.EtcdConfig, *etcdstate.Etcd) {
	t.Helper()
	cfg, err := state.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = timeout
	e, err := etcdstate.Open(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return cfg, e
}

// checkSerialsGapless checks that the serials etcd recorded under prefix,
// from the first revision on, are 1, 2, … last: no gap, no duplicate.
func checkSerialsGapless(t *testing.T, endpoints []string, prefix string, last int64) {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var serials []int64
	for wr := range client.Watch(ctx, prefix+"/"+state.EtcdNamespace+"/serial", clientv3.WithRev(1)) {
		for _, ev := range wr.Events {
			n, _ := strconv.ParseInt(string(ev.Kv.Value), 10, 64)
			serials = append(serials, n)
		}
		if len(serials) > 0 && serials[len(serials)-1] >= last {
			break
		}
	}
	want := make([]int64, last)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(serials, want) {
		t.Errorf("the serials committed: %v; want %v (no gap, no duplicate)", serials, want)
	}
}
