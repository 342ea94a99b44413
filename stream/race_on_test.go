//go:build race

package stream

// raceEnabled: under the race detector the long randomized tests run
// smaller; the plain pass runs them in full.
const raceEnabled = true
