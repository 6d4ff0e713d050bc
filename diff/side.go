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
// unified diffs read them), every file but the node files when base is empty.
// Any other file is encoded again when read. revision
// and toolVersion are those of manifest.json.
func RenderedSide(rs []*render.Rendered, revision, toolVersion string, base map[string]string) (*Side, error) {
	c := newCollector(base, nil)
	if err := render.Stream(rs, revision, toolVersion, c.put); err != nil {
		return nil, err
	}
	return c.side(rs), nil
}

// RenderedClusterSide is RenderedSide of one rendered cluster: its files, without
// manifest.json. each, when not nil, is handed every file with its digest (hex)
// as it is encoded, from several goroutines at once (data is valid until it
// returns); its first error stops the encoding and is returned.
func RenderedClusterSide(r *render.Rendered, base map[string]string, each func(name string, data []byte, sum string) error) (*Side, error) {
	c := newCollector(base, each)
	if err := render.StreamClusterSums(r, c.putSum); err != nil {
		return nil, err
	}
	return c.side([]*render.Rendered{r}), nil
}

// RenderedClusterSides are the sides of one cluster rendered on each side of
// a diff: base's keeps every file but the node files (RenderedClusterSide
// with an empty base), head's is compared with it. The node files and DOT
// files both renders have byte for byte (render.SameFiles, exact) are encoded
// on neither side: each side records them under SameDigest. A release change,
// which edits the task catalogues, encoded and hashed every node file and DOT
// file of its clusters twice to find them the same.
func RenderedClusterSides(base, head *render.Rendered) (baseSide, headSide *Side, err error) {
	same := render.SameFiles(base, head)
	bc := newCollector(map[string]string{}, nil)
	if err := render.StreamClusterExcept(base, same, bc.putSum); err != nil {
		return nil, nil, err
	}
	hc := newCollector(bc.digests, nil)
	if err := render.StreamClusterExcept(head, same, hc.putSum); err != nil {
		return nil, nil, err
	}
	for name := range same {
		bc.digests[name], hc.digests[name] = SameDigest, SameDigest
	}
	return bc.side([]*render.Rendered{base}), hc.side([]*render.Rendered{head}), nil
}

// collector gathers the digests of a render as it is streamed, and the files
// a comparison with base reads.
type collector struct {
	base    map[string]string
	each    func(name string, data []byte, sum string) error
	mu      sync.Mutex
	digests map[string]string
	kept    map[string][]byte
}

func newCollector(base map[string]string, each func(name string, data []byte, sum string) error) *collector {
	return &collector{base: base, each: each, digests: map[string]string{}, kept: map[string][]byte{}}
}

func (c *collector) put(name string, data []byte) error {
	sum := sha256.Sum256(data)
	return c.putSum(name, data, hex.EncodeToString(sum[:]))
}

// putSum is put of a file whose digest (hex sha256) is known.
func (c *collector) putSum(name string, data []byte, hexSum string) error {
	if c.each != nil {
		if err := c.each(name, data, hexSum); err != nil {
			return err
		}
	}
	var keep []byte
	// cluster.yaml says what the nodes are, changed or not. A node file is
	// never kept when there is a base: one base does not have is compared by
	// the model's task ids (oneSided), one it has by the model's tasks
	// (modelTasks); it is encoded again if something asks for its bytes (a
	// unified diff), rather than held through a first apply or a release
	// change (every node file of the render).
	before := c.base[name]
	kind, _, _, _ := artifactPath(name)
	switch {
	case strings.HasSuffix(name, "/cluster.yaml"):
		keep = bytes.Clone(data)
	case kind == "node" && c.base != nil:
	case before != hexSum:
		keep = bytes.Clone(data)
	}
	c.mu.Lock()
	c.digests[name] = hexSum
	if keep != nil {
		c.kept[name] = keep
	}
	c.mu.Unlock()
	return nil
}

// side is the side of the render rs collected.
func (c *collector) side(rs []*render.Rendered) *Side {
	digests, kept := c.digests, c.kept
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
			// A node file, which the collector does not keep when it has a
			// base: encoded again.
			return render.EncodeFile(rs, name)
		},
	}
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
