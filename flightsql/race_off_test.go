//go:build !race

package flightsql_test

const raceEnabled = false
