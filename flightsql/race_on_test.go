//go:build race

package flightsql_test

// raceEnabled: the race detector multiplies memory, so RSS bounds do not hold.
const raceEnabled = true
