package flightsql_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// TestCancelFlightInfoOnlyOwn: with authentication, CancelFlightInfo
// cancels only the caller's own DoGets of the info's tickets, as only the
// user a ticket was issued to may DoGet it. Another user's cancel was
// obeyed: anyone holding a FlightInfo (handed to parallel readers, say)
// could stop its owner's query.
func TestCancelFlightInfoOnlyOwn(t *testing.T) {
	ts := startServer(t, flightsql.Options{
		Users:  map[string]string{"a": "pa", "b": "pb"},
		Grants: []flightsql.Grant{{User: "a", Database: "*", Privilege: engine.Admin}, {User: "b", Database: "*", Privilege: engine.Admin}},
	})
	cl, _ := ts.rawClient(t)
	a, b := basic("a", "pa"), basic("b", "pb")
	if _, err := cl.ExecuteUpdate(a, "CREATE TABLE big AS SELECT * FROM range(0, 300000) AS r(id)"); err != nil {
		t.Fatal(err)
	}
	info, err := cl.Execute(a, `SELECT x.id FROM big x CROSS JOIN big y`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(a, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	res, err := cl.CancelFlightInfo(b, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusNotCancellable {
		t.Fatalf("another user's cancel: %v, %v, want not cancellable", res.Status, err)
	}
	for range 20 {
		if !rdr.Next() {
			t.Fatalf("a's stream ended after b's cancel: %v", rdr.Err())
		}
	}
	res, err = cl.CancelFlightInfo(a, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("the owner's cancel: %v, %v, want cancelled", res.Status, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rdr.Next() {
		if time.Now().After(deadline) {
			t.Fatal("stream still running 10s after cancel")
		}
	}
	if code := status.Code(rdr.Err()); code != codes.Canceled {
		t.Fatalf("stream ended with %v, want Canceled", rdr.Err())
	}
}
