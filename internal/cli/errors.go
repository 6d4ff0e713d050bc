package cli

import (
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// failureKey is the app's Metadata key of the run's *failure.
const failureKey = "failure"

// failure is what a run tells of a failure besides its message: the
// diagnostics the command printed (globals.writeDiagnostics).
type failure struct {
	diagnostics []jsonDiagnostic
}

// note keeps diags (file names as printed: prefix and the file).
func (f *failure) note(diags hcl.Diagnostics, prefix string) {
	if f != nil {
		f.diagnostics = append(f.diagnostics, toJSONDiagnostics(diags, prefix)...)
	}
}

// errorJSON is the JSON error document of a failure with --format json:
// {"format_version": "1", "error": {"message": ..., "diagnostics": [...]}}.
type errorJSON struct {
	FormatVersion string `json:"format_version"`
	Error         struct {
		Message     string           `json:"message"`
		Diagnostics []jsonDiagnostic `json:"diagnostics"`
	} `json:"error"`
}

// report prints the JSON error document of the failure msg on w.
func (f *failure) report(w io.Writer, msg string) {
	doc := errorJSON{FormatVersion: formatVersion}
	doc.Error.Message = msg
	doc.Error.Diagnostics = append([]jsonDiagnostic{}, f.diagnostics...)
	_ = writeJSON(w, doc)
}

// formatOf is the --format of a command line: the last one given before
// "--" (a command's own comes after the global one, and wins); "" when none
// is.
func formatOf(args []string) string {
	format := ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "format" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		format = value
	}
	return format
}

// stdoutWatch is the run's stdout: it notes whether anything was written
// (a document printed before the command failed gets no error document
// after it).
type stdoutWatch struct {
	w     io.Writer
	wrote bool
}

func (s *stdoutWatch) Write(p []byte) (int, error) {
	if len(p) > 0 {
		s.wrote = true
	}
	return s.w.Write(p)
}
