package state

import "github.com/fuelsync/fuelsync/base/failpoint"

// onStep enables the failpoint before each step that changes the disk
// (step): f is given the step's name, and its error is the step's.
func onStep(f func(step string) error) {
	failpoint.Enable(failpoint.StateStep, func(args ...string) error { return f(args[0]) })
}

// offStep disables it.
func offStep() { failpoint.Disable(failpoint.StateStep) }

// onRead enables the failpoint told each content a publish reads (readHook).
func onRead(f func(what string)) {
	failpoint.Enable(failpoint.StateRead, func(args ...string) error { f(args[0]); return nil })
}

// offRead disables it.
func offRead() { failpoint.Disable(failpoint.StateRead) }
