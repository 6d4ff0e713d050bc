package etcdstate

// Reaching etcd. The client dials lazily and waits, request by request, for
// a connection until the request timeout (10 s by default); the error it
// returns then is the context's ("context deadline exceeded"), whatever the
// dials met. So while the client holds no ready connection, each request is
// preceded by a TCP dial of every endpoint, at once, for at most dialProbe:
// when none answers, the request fails at once with what the dials met
// ("connection refused", "no answer within 2s") instead of after the
// timeout with a guess. Once connected (the steady state), nothing is dialled
// besides the client's own connection.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/connectivity"
)

// dialProbe bounds each endpoint's dial of a reachability check.
const dialProbe = 2 * time.Second

// UnreachableError says no endpoint of the state's etcd accepted a
// connection: each endpoint with what its dial met.
type UnreachableError struct {
	Endpoints []string
	Reasons   []string
	// Refused says every endpoint refused the connection (nothing listens).
	Refused bool
}

func (e *UnreachableError) Error() string {
	if e.Refused {
		return fmt.Sprintf("connection refused at %s: is etcd running and listening there?", strings.Join(e.Endpoints, ", "))
	}
	parts := make([]string, len(e.Endpoints))
	for i, ep := range e.Endpoints {
		parts[i] = ep + ": " + e.Reasons[i]
	}
	return "no etcd endpoint reachable (" + strings.Join(parts, "; ") + ")"
}

// connected says the client holds a ready connection to a member.
func (e *Etcd) connected() bool {
	conn := e.client.ActiveConnection()
	return conn != nil && conn.GetState() == connectivity.Ready
}

// reach checks, while the client is not connected, that some endpoint
// accepts a TCP connection: an *UnreachableError, wrapped as what (the
// request's words, as wrap does), when none does.
func (e *Etcd) reach(ctx context.Context, what string) error {
	if e.connected() {
		return nil
	}
	if err := probe(ctx, e.cfg.Endpoints, min(dialProbe, e.cfg.Timeout)); err != nil {
		return fmt.Errorf("%s %s: %w", what, e, err)
	}
	return nil
}

// probe dials every endpoint at once, for at most timeout each: nil as soon
// as one accepts, else an *UnreachableError with what each dial met.
func probe(parent context.Context, endpoints []string, timeout time.Duration) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(endpoints))
	for i, ep := range endpoints {
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", ep)
			if err == nil {
				c.Close()
			}
			results <- result{i, err}
		}()
	}
	reasons := make([]string, len(endpoints))
	refused := true
	for range endpoints {
		r := <-results
		if r.err == nil {
			return nil
		}
		switch {
		case errors.Is(r.err, syscall.ECONNREFUSED):
			reasons[r.i] = "connection refused"
		case errors.Is(r.err, context.DeadlineExceeded) || isTimeout(r.err):
			reasons[r.i] = fmt.Sprintf("no answer within %s", timeout)
			refused = false
		default:
			reasons[r.i] = dialReason(r.err)
			refused = strings.Contains(reasons[r.i], "connection refused") && refused
		}
	}
	if err := parent.Err(); err != nil {
		return err // the caller gave up: no verdict
	}
	return &UnreachableError{Endpoints: endpoints, Reasons: reasons, Refused: refused}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialReason is what a failed dial met, without the "dial tcp host:port:"
// the message names already.
func dialReason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}
