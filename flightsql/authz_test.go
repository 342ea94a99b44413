package flightsql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// cmdDescriptor wraps a Flight SQL command as GetFlightInfo expects it.
func cmdDescriptor(t *testing.T, m proto.Message) *flight.FlightDescriptor {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

// ticketOf wraps a statement handle as a DoGet ticket.
func ticketOf(t *testing.T, m proto.Message) *flight.Ticket {
	return &flight.Ticket{Ticket: cmdDescriptor(t, m).Cmd}
}

// statementHandle unwraps the statement handle of a query's ticket.
func statementHandle(t *testing.T, info *flight.FlightInfo) []byte {
	t.Helper()
	var a anypb.Any
	if err := proto.Unmarshal(info.Endpoint[0].Ticket.Ticket, &a); err != nil {
		t.Fatal(err)
	}
	var q pb.TicketStatementQuery
	if err := a.UnmarshalTo(&q); err != nil {
		t.Fatal(err)
	}
	return q.GetStatementHandle()
}

func TestAuthorization(t *testing.T) {
	ts := startServer(t, flightsql.Options{
		Users: map[string]string{"root": "r", "reader": "x", "writer": "y"},
		Grants: []flightsql.Grant{
			{User: "root", Database: "*", Privilege: engine.Admin},
			{User: "reader", Database: "sales", Privilege: engine.Read},
			{User: "writer", Database: "sales", Privilege: engine.Write},
		},
	})
	cl := ts.clientFrom(t, "127.0.0.1")
	root, reader, writer := basic("root", "r"), basic("reader", "x"), basic("writer", "y")
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE TABLE sales.t (k BIGINT)", "INSERT INTO sales.t VALUES (1)",
		"CREATE TABLE default.secret (s STRING)", "INSERT INTO default.secret VALUES ('x')",
		"CREATE VIEW sales.v AS SELECT * FROM default.secret",
	} {
		if _, err := cl.ExecuteUpdate(root, q); err != nil {
			t.Fatalf("root: %s: %v", q, err)
		}
	}
	rows := func(ctx context.Context, q string) (int64, error) {
		info, err := cl.Execute(ctx, q)
		if err != nil {
			return 0, err
		}
		return fetchAll(ctx, cl, info)
	}
	if n, err := rows(reader, "SELECT * FROM sales.t"); err != nil || n != 1 {
		t.Fatalf("reader reads sales.t: %d rows, %v", n, err)
	}
	if n, err := rows(reader, "SHOW TABLES FROM sales"); err != nil || n != 1 {
		t.Fatalf("reader lists sales: %d rows, %v", n, err)
	}
	for _, q := range []string{
		"SELECT * FROM default.secret",
		"SELECT * FROM default.nosuch", // denied, not NotFound: nothing about default leaks
		"SELECT * FROM sales.v",        // a view reads as its caller
		"SELECT * FROM sales.t JOIN default.secret ON true",
		"SHOW TABLES FROM default",
		"DESCRIBE default.secret",
		"EXPLAIN SELECT * FROM default.secret",
		"EXPLAIN INSERT INTO sales.t VALUES (9)",
	} {
		_, err := rows(reader, q)
		wantCode(t, "reader: "+q, err, codes.PermissionDenied)
		if msg := err.Error(); !strings.Contains(msg, "[SQLSTATE 42501]") || strings.Contains(msg, "view default.secret") {
			t.Errorf("reader: %s: %v, want SQLSTATE 42501 and no mention of a view", q, msg)
		}
	}
	// ListFlights shows the reader the tables it may read, and nothing of
	// default; the ticket of each is the reader's.
	lf, err := cl.Client.ListFlights(reader, &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	var flights []string
	for {
		info, err := lf.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reader: ListFlights: %v", err)
		}
		flights = append(flights, strings.Join(info.GetFlightDescriptor().GetPath(), "."))
		if n, err := fetchAll(reader, cl, info); err != nil || n != 1 {
			t.Fatalf("reader: DoGet of ListFlights' ticket for %v: %d rows, %v", flights, n, err)
		}
		if _, err := fetchAll(writer, cl, info); err == nil {
			t.Fatalf("writer read the reader's ListFlights ticket for %v", flights)
		}
	}
	if !slices.Equal(flights, []string{"sales.t"}) {
		t.Fatalf("reader: ListFlights listed %v, want [sales.t]", flights)
	}
	// A reader records its own consumer position; compaction needs write.
	for _, q := range []string{"CALL sys.reset_consumer('sales.t', 'c1', 1)", "USE sales"} {
		if _, err := cl.ExecuteUpdate(reader, q); err != nil {
			t.Fatalf("reader: %s: %v", q, err)
		}
	}
	for _, q := range []string{"CALL sys.compact('sales.t')", "USE default"} {
		_, err := cl.ExecuteUpdate(reader, q)
		wantCode(t, "reader: "+q, err, codes.PermissionDenied)
	}
	if _, err := cl.ExecuteUpdate(writer, "CALL sys.compact('sales.t')"); err != nil {
		t.Fatalf("writer compacts: %v", err)
	}
	for _, q := range []string{
		"INSERT INTO sales.t VALUES (2)", "DELETE FROM sales.t", "DROP TABLE sales.t",
		"CREATE TABLE sales.u (k BIGINT)", "DROP DATABASE sales CASCADE", "CALL sys.create_tag('sales.t', 'tag1')",
	} {
		_, err := cl.ExecuteUpdate(reader, q)
		wantCode(t, "reader: "+q, err, codes.PermissionDenied)
		_, err = cl.Prepare(reader, q)
		wantCode(t, "reader prepares: "+q, err, codes.PermissionDenied)
	}
	if _, err := cl.ExecuteUpdate(writer, "INSERT INTO sales.t VALUES (2)"); err != nil {
		t.Fatalf("writer inserts: %v", err)
	}
	for _, q := range []string{"CREATE TABLE sales.u (k BIGINT)", "ALTER TABLE sales.t ADD COLUMN c INT", "INSERT INTO default.secret VALUES ('y')"} {
		_, err := cl.ExecuteUpdate(writer, q)
		wantCode(t, "writer: "+q, err, codes.PermissionDenied)
	}

	// Ingest: appending needs write, creating a table admin.
	ingest := func(ctx context.Context, opts *arrowflightsql.ExecuteIngestOpts) error {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		b := array.NewInt64Builder(mem)
		b.Append(7)
		col := b.NewArray()
		b.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
		col.Release()
		rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		_, err = cl.ExecuteIngest(ctx, rdr, opts)
		return err
	}
	appendT := &arrowflightsql.ExecuteIngestOpts{Schema: proto.String("sales"), Table: "t", TableDefinitionOptions: &arrowflightsql.TableDefinitionOptions{
		IfNotExist: arrowflightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: arrowflightsql.TableDefinitionOptionsTableExistsOptionAppend}}
	wantCode(t, "reader appends by ingest", ingest(reader, appendT), codes.PermissionDenied)
	if err := ingest(writer, appendT); err != nil {
		t.Fatalf("writer appends by ingest: %v", err)
	}
	wantCode(t, "writer creates by ingest", ingest(writer, &arrowflightsql.ExecuteIngestOpts{Schema: proto.String("sales"), Table: "new", TableDefinitionOptions: &arrowflightsql.TableDefinitionOptions{
		IfNotExist: arrowflightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: arrowflightsql.TableDefinitionOptionsTableExistsOptionFail}}), codes.PermissionDenied)

	changes := &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: []byte(flightsql.ChangesTicketPrefix + `{"table":"default.secret"}`)}}}}
	_, err = fetchAll(reader, cl, changes)
	wantCode(t, "reader streams default's changes", err, codes.PermissionDenied)

	// Metadata lists only the tables of databases the user reads.
	info, err := cl.GetTables(reader, &arrowflightsql.GetTablesOpts{})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(reader, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for rdr.Next() {
		for _, r := range batchRows(rdr.RecordBatch()) {
			listed = append(listed, r[1]+"."+r[2])
		}
	}
	rdr.Release()
	if len(listed) != 2 || listed[0] != "sales.t" || listed[1] != "sales.v" {
		t.Fatalf("reader's GetTables: %v", listed)
	}

	// Tickets are bound to their user and signed.
	info, err = cl.Execute(reader, "SELECT * FROM sales.t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetchAll(writer, cl, info)
	wantCode(t, "writer redeems reader's ticket", err, codes.PermissionDenied)
	if n, err := fetchAll(reader, cl, info); err != nil || n != 3 {
		t.Fatalf("reader redeems own ticket: %d rows, %v", n, err)
	}
	handle := statementHandle(t, info)
	sig, body := handle[:len("flightd/q2:")+32], handle[len("flightd/q2:")+32:]
	var tkt map[string]any
	if err := json.Unmarshal(body, &tkt); err != nil {
		t.Fatal(err)
	}
	tkt["sql"] = "SELECT * FROM default.secret"
	tkt["user"] = "root"
	altered, err := json.Marshal(tkt)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetchAll(reader, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: ticketOf(t, &pb.TicketStatementQuery{StatementHandle: append(bytes.Clone(sig), altered...)})}}})
	wantCode(t, "altered ticket", err, codes.PermissionDenied)
	unsigned := append([]byte("flightd/q1:"), altered...)
	_, err = fetchAll(reader, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: ticketOf(t, &pb.TicketStatementQuery{StatementHandle: unsigned})}}})
	wantCode(t, "unsigned ticket", err, codes.InvalidArgument)

	// Prepared statements and transactions belong to their user.
	ps, err := cl.Prepare(reader, "SELECT * FROM sales.t")
	if err != nil {
		t.Fatal(err)
	}
	psInfo := &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: ticketOf(t, &pb.CommandPreparedStatementQuery{PreparedStatementHandle: ps.Handle()})}}}
	_, err = fetchAll(writer, cl, psInfo)
	wantCode(t, "writer runs reader's prepared statement", err, codes.NotFound)
	if err := ps.Close(writer); err == nil {
		t.Fatal("writer closed reader's prepared statement")
	}
	if n, err := fetchAll(reader, cl, psInfo); err != nil || n != 3 {
		t.Fatalf("reader's prepared statement after writer's close: %d rows, %v", n, err)
	}
	tx, err := cl.BeginTransaction(writer)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Client.GetFlightInfo(reader, cmdDescriptor(t, &pb.CommandStatementQuery{Query: "SELECT * FROM sales.t", TransactionId: tx.ID()}))
	wantCode(t, "reader uses writer's transaction", err, codes.NotFound)
	if err := tx.Rollback(reader); err == nil {
		t.Fatal("reader ended writer's transaction")
	}
	if _, err := cl.Client.GetFlightInfo(writer, cmdDescriptor(t, &pb.CommandStatementQuery{Query: "SELECT * FROM sales.t", TransactionId: tx.ID()})); err != nil {
		t.Fatalf("writer's transaction after reader's rollback: %v", err)
	}
}
