//go:build race

package tablestore

// raceEnabled: under the race detector the long randomized tests run fewer
// steps; the plain pass runs them in full.
const raceEnabled = true
