//go:build fuelsync_testhooks

package runs

import "time"

// SetClock makes c read the time from now instead of the system's clock:
// the page tests draw a run at the times of a real deployment (minutes a
// task) without waiting for them. Set before c starts; now must be safe
// to call from several goroutines.
func (c *Coordinator) SetClock(now func() time.Time) { c.now = now }
