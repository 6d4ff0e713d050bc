package server

import (
	"bytes"
	"fmt"
	"github.com/fuelsync/fuelsync/controller"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestDeliveryDedupeBounded: the dedupe map holds at most MaxSeenDeliveries
// ids, the oldest forgotten first, and none older than DeliveryRetention; a
// remembered id is a duplicate. (The old map grew without bound within an hour:
// 1,000 replays of 200 KB ids kept 392 MB.)
func TestDeliveryDedupeBounded(t *testing.T) {
	s := New(&controller.Loop{}, []byte("s"))
	const n = MaxSeenDeliveries + 500
	for i := range n {
		if s.duplicate(fmt.Sprintf("github/%d", i)) {
			t.Fatalf("id %d: a duplicate on first sight", i)
		}
	}
	if len(s.seen) != MaxSeenDeliveries || len(s.order) != MaxSeenDeliveries {
		t.Fatalf("%d ids remembered (%d in order), want %d", len(s.seen), len(s.order), MaxSeenDeliveries)
	}
	if !s.duplicate(fmt.Sprintf("github/%d", n-1)) || !s.duplicate("github/500") {
		t.Error("a remembered id is not a duplicate")
	}
	if s.duplicate("github/499") {
		t.Error("the oldest ids are still remembered")
	}
	// Past the retention, an id is forgotten.
	s.mu.Lock()
	for i := range s.order {
		s.order[i].at = s.order[i].at.Add(-DeliveryRetention)
		s.seen[s.order[i].id] = s.order[i].at
	}
	s.mu.Unlock()
	if s.duplicate(fmt.Sprintf("github/%d", n-1)) {
		t.Error("an id older than the retention is a duplicate")
	}
	if len(s.seen) != 1 {
		t.Errorf("%d ids remembered after the retention, want 1", len(s.seen))
	}
}

// TestGenericReplayWindow: a generic delivery is signed over its timestamp and
// body; one in the window is accepted, the same again is a duplicate; a captured
// delivery replayed outside the window, one whose timestamp was changed after
// signing, and one signed the old way (the body alone) are refused.
func TestGenericReplayWindow(t *testing.T) {
	secret := []byte("s3cret")
	srv := New(&controller.Loop{}, secret)
	h := srv.Handler()
	body := []byte(`{"ref":"refs/heads/main"}`)
	post := func(header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, "/hooks/generic", bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	now := time.Now()
	fresh := genericHeaders(secret, now, body)
	fresh["X-Fuelsync-Delivery"] = "d-1"
	if code := post(fresh); code != 202 {
		t.Errorf("a fresh delivery: %d", code)
	}
	if code := post(fresh); code != 200 {
		t.Errorf("the same delivery again: %d, want 200 (duplicate)", code)
	}
	stale := genericHeaders(secret, now.Add(-ReplayWindow-time.Second), body)
	if code := post(stale); code != 401 {
		t.Errorf("a delivery signed %v ago: %d, want 401", ReplayWindow+time.Second, code)
	}
	moved := genericHeaders(secret, now.Add(-ReplayWindow-time.Second), body)
	moved["X-Fuelsync-Timestamp"] = strconv.FormatInt(now.Unix(), 10)
	if code := post(moved); code != 401 {
		t.Errorf("a stale delivery with a new timestamp: %d, want 401", code)
	}
	if code := post(map[string]string{"X-Fuelsync-Timestamp": strconv.FormatInt(now.Unix(), 10), "X-Fuelsync-Signature": sign(secret, body)}); code != 401 {
		t.Errorf("a signature over the body alone: %d, want 401", code)
	}
	if code := post(genericHeaders(secret, now.Add(ReplayWindow-10*time.Second), body)); code != 202 {
		t.Errorf("a delivery stamped just inside the window: %d, want 202", code)
	}
}

// TestEmptySecretRefusesAll: a server without a secret refuses every delivery,
// even one signed with the empty key (which the old server accepted: an HMAC
// keyed with nothing is computable by anyone).
func TestEmptySecretRefusesAll(t *testing.T) {
	h := New(&controller.Loop{}, nil).Handler()
	body := []byte(`{}`)
	for provider, header := range map[string]map[string]string{
		"github":  {"X-Hub-Signature-256": sign(nil, body)},
		"gitea":   {"X-Gitea-Signature": sign(nil, body)[len("sha256="):]},
		"gitlab":  {"X-Gitlab-Token": " "},
		"generic": genericHeaders(nil, time.Now(), body),
	} {
		req := httptest.NewRequest(http.MethodPost, "/hooks/"+provider, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 401 {
			t.Errorf("%s signed with the empty key: %d, want 401", provider, w.Code)
		}
	}
}
