package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/operation"
)

// burstOutcome is what one agent of a burst got: a status (0: none) and its
// Retry-After, or the error that ended its connection without an answer.
type burstOutcome struct {
	code       int
	retryAfter string
	err        error
}

// burst opens n connections to addr at the same moment, each sending one
// request for path (the test's If-None-Match and wait) as soon as it is
// connected, and returns what each got.
func burst(t *testing.T, addr, path, etag string, n int, deadline time.Duration) []burstOutcome {
	t.Helper()
	out := make([]burstOutcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := net.DialTimeout("tcp", addr, deadline)
			if err != nil {
				out[i].err = err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(deadline))
			if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: agent\r\nIf-None-Match: %s\r\n\r\n", path, etag); err != nil {
				out[i].err = err
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				out[i].err = err
				return
			}
			resp.Body.Close()
			out[i].code, out[i].retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		})
	}
	close(start)
	wg.Wait()
	return out
}

// TestArtifactAPIBurstEveryAgentAnswered: 200 agents open a long-poll at the
// same moment against a capacity of 50 waiting requests and 16 other
// connections. Every one is answered: 50 wait (304 at their deadline) and
// the other 150 get 429 with a Retry-After in the documented range at once. None is
// closed without an answer (the connection cap used to close the connections
// that had not been read yet: with 5,000 agents, 4,744 got nothing).
func TestArtifactAPIBurstEveryAgentAnswered(t *testing.T) {
	const agents, capacity = 200, 50
	a := startAPI(t, func(s *Server, lim *Limits) {
		s.MaxWaiting = capacity
		lim.MaxConnections = 16
	})
	a.reconcile(t, operation.Applied)
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	out := burst(t, a.base[len("http://"):], node2Graph+"?wait=3s", etag, agents, 20*time.Second)
	var held, refused, dropped, other int
	for i, o := range out {
		switch {
		case o.err != nil:
			dropped++
			if dropped <= 3 {
				t.Errorf("agent %d: closed without an answer: %v", i, o.err)
			}
		case o.code == http.StatusNotModified:
			held++
		case o.code == http.StatusTooManyRequests:
			refused++
			if s, err := strconv.Atoi(o.retryAfter); err != nil || s < RetryAfterMin || s > RetryAfterMax {
				t.Errorf("agent %d: 429 with Retry-After %q, want %d to %d seconds", i, o.retryAfter, RetryAfterMin, RetryAfterMax)
			}
		default:
			other++
			if other <= 3 {
				t.Errorf("agent %d: %d (Retry-After %q), want 304 after its wait or 429", i, o.code, o.retryAfter)
			}
		}
	}
	t.Logf("%d agents, capacity %d: %d held, %d answered 429, %d closed without an answer, %d other", agents, capacity, held, refused, dropped, other)
	if held != capacity || refused != agents-capacity {
		t.Errorf("%d held and %d answered 429, want %d and %d (%d closed without an answer, %d other)", held, refused, capacity, agents-capacity, dropped, other)
	}
}
