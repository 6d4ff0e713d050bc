package examples

import "embed"

// FuelMitaka is the fuel-mitaka example: the real Fuel 9.x release and four
// upstream plugins under fuel-mitaka/plugins. internal/repogen builds its
// real-data shape (repogen.Mitaka) on it.
//
//go:embed fuel-mitaka
var FuelMitaka embed.FS
