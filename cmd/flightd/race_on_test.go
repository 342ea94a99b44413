//go:build race

package main

// raceEnabled: the race detector slows this test process (its clients
// and checks; the flightd it starts is built without it).
const raceEnabled = true
