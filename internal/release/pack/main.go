// Command pack writes the release archives of make release and their
// SHA256SUMS (package release):
//
//	go run ./internal/release/pack -version v1.2.3 -created SECONDS -o dist bin/release/linux-amd64 …
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fuelsync/fuelsync/internal/release"
)

func main() {
	var version, out, readme string
	var created int64
	flag.StringVar(&version, "version", "dev", "the release's `VERSION` (git describe), in the archives' names")
	flag.Int64Var(&created, "created", 0, "the files' times, in `SECONDS` since 1970 (the commit's time: reproducible archives)")
	flag.StringVar(&out, "o", "dist", "write the archives and SHA256SUMS into `DIR`")
	flag.StringVar(&readme, "readme", "README.md", "the `FILE` each archive holds as README.md")
	flag.Parse()
	names, err := release.Write(out, version, readme, time.Unix(created, 0).UTC(), flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(filepath.Join(out, n))
	}
	fmt.Println(filepath.Join(out, "SHA256SUMS"))
}
