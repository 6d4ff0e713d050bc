package diff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/render"
)

// RenderedSide is the side of a render: the digest of every artifact (encoded and
// hashed as render.Stream does), and, kept in memory, the clusters' cluster.yaml,
// the node files base has with another digest, and the other files whose digest
// differs from base; every file when base is nil (one side of a diff, whose
// unified diffs read them). Any other file is encoded again when read. revision
// and toolVersion are those of manifest.json.
func RenderedSide(rs []*render.Rendered, revision, toolVersion string, base map[string]string) (*Side, error) {
	var mu sync.Mutex
	digests := map[string]string{}
	kept := map[string][]byte{}
	err := render.Stream(rs, revision, toolVersion, func(name string, data []byte) error {
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		var keep []byte
		// cluster.yaml says what the nodes are, changed or not. A node file base
		// does not have is compared by the model's task ids (bothTasks), not read:
		// it is encoded again if something asks for its bytes (a unified diff),
		// rather than held through a first apply (every file of the render).
		before, inBase := base[name]
		kind, _, _, _ := artifactPath(name)
		switch {
		case strings.HasSuffix(name, "/cluster.yaml"):
			keep = bytes.Clone(data)
		case kind == "node" && base != nil:
			if inBase && before != hexSum {
				keep = bytes.Clone(data)
			}
		case before != hexSum:
			keep = bytes.Clone(data)
		}
		mu.Lock()
		digests[name] = hexSum
		if keep != nil {
			kept[name] = keep
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Side{
		Digests:  digests,
		Rendered: rs,
		encoded:  true,
		Read: func(name string) ([]byte, error) {
			if data, ok := kept[name]; ok {
				return data, nil
			}
			if _, ok := digests[name]; !ok {
				return nil, fmt.Errorf("%s: not in the render", name)
			}
			// A node file whose bytes did not change, of a graph whose task
			// catalogue did: encoded again.
			return render.EncodeFile(rs, name)
		},
	}, nil
}

// FSSide is an artifact set stored as files (an applied set), with the digests
// recorded for it.
func FSSide(fsys fs.FS, digests map[string]string) *Side {
	return &Side{
		Digests: digests,
		Read:    func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) },
	}
}

// Kept returns the bytes a side holds for name (for unified diffs), reading them
// when needed; ok is false when the side has no such file.
func (s *Side) Kept(name string) ([]byte, bool, error) {
	if _, ok := s.Digests[name]; !ok {
		return nil, false, nil
	}
	data, err := s.Read(name)
	return data, err == nil, err
}
