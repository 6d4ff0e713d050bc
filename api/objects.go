package api

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Objects asks another replica of serve --shard for the objects of its work
// directory whose sha256 digests (lower-case hex) are sums, distinct (POST
// /api/v1/objects), and gives each to each, in the order asked, as it
// streams in: its digest and its bytes, checked against the digest. It
// stops at the first error: one each returns, an answer that is not 200 (a
// *StatusError), an object over maxSize bytes, one whose bytes do not have
// its digest, or an answer that stops short (a replica stops before an
// object it lost meanwhile, or past its bound of bytes). The whole exchange
// has timeout.
func (c *Client) Objects(ctx context.Context, sums []string, maxSize int64, timeout time.Duration, each func(sum string, data []byte) error) error {
	if c.Base == nil {
		return errors.New("no server URL")
	}
	if len(sums) == 0 {
		return nil
	}
	u := *c.Base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/objects"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(strings.Join(sums, "\n")+"\n"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return errors.New(c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{Code: resp.StatusCode, Message: firstLine(c.scrub(string(msg))),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for _, sum := range sums {
		data, err := readObject(br, sum, maxSize)
		if err != nil {
			return err
		}
		if err := each(sum, data); err != nil {
			return err
		}
	}
	return nil
}

// readObject reads the object sum from an answer of POST /api/v1/objects:
// a line "<sha256> <size>", then its bytes, at most maxSize, checked against
// sum.
func readObject(br *bufio.Reader, sum string, maxSize int64) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, fmt.Errorf("the answer stops before the file %s: %v", sum, err)
	}
	got, size, ok := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
	n, perr := strconv.ParseInt(size, 10, 64)
	if !ok || got != sum || perr != nil || n < 0 {
		return nil, fmt.Errorf("the answer has %q where the file %s is due", firstLine(string(line)), sum)
	}
	if n > maxSize {
		return nil, fmt.Errorf("the file %s is %d bytes, over the bound of %d", sum, n, maxSize)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("the answer stops within the file %s: %v", sum, err)
	}
	h := sha256.Sum256(data)
	if hex.EncodeToString(h[:]) != sum {
		return nil, fmt.Errorf("the file sent as %s has the sha256 %s: it does not match the committed digest, refused", sum, hex.EncodeToString(h[:]))
	}
	return data, nil
}
