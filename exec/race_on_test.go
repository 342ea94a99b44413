//go:build race

package exec_test

// raceEnabled: under the race detector the long randomized tests run fewer
// rounds; the plain pass runs them in full.
const raceEnabled = true
