package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delivery is serve's answer to a generic webhook delivery (Trigger).
type Delivery struct {
	// ID is the delivery's X-Fuelsync-Delivery: 16 random hex digits.
	ID string
	// Code and Status are the answer's HTTP status ("202 Accepted").
	Code   int
	Status string
	// Response is the answer's first line: printable, at most 300 bytes.
	Response string
}

// Accepted says serve took the delivery.
func (d Delivery) Accepted() bool { return d.Code == http.StatusAccepted || d.Code == http.StatusOK }

// Sign is the X-Fuelsync-Signature of a generic delivery (and of serve's own
// notifications): sha256= and the hex HMAC-SHA256, under secret, of the
// timestamp, a dot and the body.
func Sign(secret []byte, stamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(stamp + "."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// triggerTimeout bounds a delivery, its answer read; maxDeliveryAnswer the
// bytes of the answer read.
const (
	triggerTimeout    = 10 * time.Second
	maxDeliveryAnswer = 4096
)

// Trigger posts a generic delivery ({"ref": ref}) to serve's /hooks/generic,
// signed with secret and stamped now, so that serve reconciles at once. A
// refused delivery is a Delivery whose Accepted is false, not an error; an
// error says serve did not answer.
func (c *Client) Trigger(ctx context.Context, secret []byte, ref string) (Delivery, error) {
	if c.Base == nil {
		return Delivery{}, errors.New("no server URL")
	}
	body, _ := json.Marshal(map[string]string{"ref": ref})
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	d := Delivery{ID: hex.EncodeToString(id)}
	ctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	u := *c.Base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/hooks/generic"
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return d, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Fuelsync-Timestamp", stamp)
	req.Header.Set("X-Fuelsync-Signature", Sign(secret, stamp, body))
	req.Header.Set("X-Fuelsync-Delivery", d.ID)
	resp, err := c.http().Do(req)
	if err != nil {
		return d, errors.New(c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxDeliveryAnswer))
	d.Code, d.Status, d.Response = resp.StatusCode, resp.Status, firstLine(string(text))
	return d, nil
}
