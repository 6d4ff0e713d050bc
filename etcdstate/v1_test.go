package etcdstate

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fuelsync/fuelsync/state"
)

// noReuse packs every unit.
var noReuse = &prior{}

// packStateV1 packs st as a fuelsync before format 2 did: the whole document
// gzipped and cut in parts (the header's Parts are left for the caller to
// name).
func packStateV1(st *state.State) (etcdHeader, [][]byte, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return etcdHeader{}, nil, err
	}
	if len(data) > state.MaxSize {
		return etcdHeader{}, nil, fmt.Errorf("the state is %d bytes, over the %d a state may be", len(data), state.MaxSize)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		return etcdHeader{}, nil, err
	}
	packed := buf.Bytes()
	sum := sha256.Sum256(packed)
	h := etcdHeader{FormatVersion: "1", Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Encoding: "gzip", Size: len(packed), PlainSize: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	var parts [][]byte
	for len(packed) > 0 {
		n := min(len(packed), EtcdPartSize)
		parts = append(parts, packed[:n])
		packed = packed[n:]
	}
	return h, parts, nil
}
