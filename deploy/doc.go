// Package deploy holds no code: its directory has the systemd units of
// fuelsync (systemd/), and its test checks them with systemd-analyze.
package deploy
