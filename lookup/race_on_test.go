//go:build race

package lookup

// raceEnabled: under the race detector the random tests' writers commit
// fewer times; the plain pass runs them in full.
const raceEnabled = true
