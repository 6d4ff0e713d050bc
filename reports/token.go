package reports

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Token is the token of node in cluster under the agent secret: the HMAC-SHA256
// of "fuelsync-agent", cluster and node (each ended by a NUL, so that no two
// pairs of names give the same message), in hexadecimal. serve computes it
// again for every report, so nothing but the secret is kept; fuelsync
// agent-token prints it with the same secret file.
func Token(secret []byte, cluster, node string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("fuelsync-agent\x00" + cluster + "\x00" + node + "\x00"))
	return hex.EncodeToString(mac.Sum(nil))
}

// CheckToken reports whether token is node's token in cluster under secret, in
// constant time. An empty secret accepts no token.
func CheckToken(secret []byte, cluster, node, token string) bool {
	if len(secret) == 0 {
		return false
	}
	want := sha256.Sum256([]byte(Token(secret, cluster, node)))
	have := sha256.Sum256([]byte(token))
	return hmac.Equal(want[:], have[:])
}
