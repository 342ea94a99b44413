package flightsql

import (
	"fmt"
	"path"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
)

// ListFlights lists the tables the caller may read, one FlightInfo each,
// for plain Flight clients: the descriptor is the table's path (database,
// table), the schema its columns, and the endpoint's ticket reads the
// whole table at DoGet time (a statement ticket, as GetFlightInfo of
// `SELECT * FROM db.table` gives). A non-empty criteria expression is a
// pattern (Go's path.Match: `sales.*`, `*.orders`) on "database.table".
func (f *flightService) ListFlights(c *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	s, ctx := f.s, stream.Context()
	pattern := string(c.GetExpression())
	if _, err := path.Match(pattern, ""); err != nil {
		return toStatus(fmt.Errorf("ListFlights: criteria %q is not a pattern such as sales.*: %v: %w", pattern, err, errBadRequest))
	}
	dbs, err := s.eng.Databases(ctx)
	if err != nil {
		return toStatus(err)
	}
	for _, db := range dbs {
		if s.allowed(ctx, db, engine.Read) != nil {
			continue
		}
		names, err := s.eng.Tables(ctx, db)
		if err != nil {
			return toStatus(err)
		}
		for _, name := range names {
			if ok, _ := path.Match(pattern, db+"."+name); pattern != "" && !ok {
				continue
			}
			id := engine.Ident{Database: db, Table: name}
			info, err := s.eng.Table(ctx, id)
			if err != nil {
				continue // dropped meanwhile
			}
			tkt, err := s.encodeTicket(queryTicket{SQL: engine.TableQuery(id), Database: db, User: userOf(ctx)})
			if err != nil {
				return toStatus(err)
			}
			handle, err := flightsql.CreateStatementQueryTicket(tkt)
			if err != nil {
				return toStatus(err)
			}
			desc := &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{db, name}}
			if err := stream.Send(s.queryInfo(info.Schema, desc, handle)); err != nil {
				return err
			}
		}
	}
	return nil
}
