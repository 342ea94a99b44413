//go:build race

package slt

// raceEnabled: under the race detector the searches over many
// configurations run a part of them; the plain pass runs them in full.
const raceEnabled = true
