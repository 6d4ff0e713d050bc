//go:build !linux

package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Elsewhere than on Linux the lock refuses at once, saying so, and makes
// nothing: no work directory, no lock file.
func TestLockNotSupportedHere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wd")
	l, err := Open(dir).Lock(context.Background(), "apply", 0)
	if !errors.Is(err, ErrUnsupportedSystem) || !strings.Contains(err.Error(), "not supported on this system") {
		t.Fatalf("Lock: %v, %v; want ErrUnsupportedSystem", l, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused lock made %s: %v", dir, err)
	}
}
