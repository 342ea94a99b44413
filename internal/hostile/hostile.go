// Package hostile builds the requests that crashed or fooled flightd (issue
// 10), for the tests that send them to an in-process server and to the
// real binary.
package hostile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Batch has a string and an integer column; with nested, also a struct
// column (which the table store refuses), whose schema carries a children
// vector to corrupt.
func Batch(mem memory.Allocator, nested bool) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if nested {
		fields = append(fields, arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int32}), Nullable: true})
	}
	bld := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer bld.Release()
	for i, s := range []string{"alpha", "beta", "gamma"} {
		bld.Field(0).(*array.StringBuilder).Append(s)
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
		if nested {
			stb := bld.Field(2).(*array.StructBuilder)
			stb.Append(true)
			stb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
			stb.FieldBuilder(1).(*array.Int32Builder).Append(int32(i))
		}
	}
	return bld.NewRecordBatch()
}

// captured collects the FlightData a real arrow-go writer produces.
type captured []*flight.FlightData

func (c *captured) Send(fd *flight.FlightData) error {
	*c = append(*c, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// Messages is what a client sends for b: the schema message, then b's.
func Messages(b arrow.RecordBatch, opts ...ipc.Option) ([]*flight.FlightData, error) {
	var msgs captured
	w := flight.NewRecordWriter(&msgs, append(opts, ipc.WithSchema(b.Schema()))...)
	if err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// IngestDescriptor is a bulk ingest into table (created if missing,
// appended to otherwise).
func IngestDescriptor(table string) *flight.FlightDescriptor {
	cmd, err := anypb.New(&pb.CommandStatementIngest{
		Table: table,
		TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
			IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
			IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
		},
	})
	if err != nil {
		panic(err) // a fixed, valid message
	}
	b, err := proto.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

// SendPut sends msgs as one DoPut and returns the call's error; a server
// that has not answered after 20 s counts as hung (DeadlineExceeded).
func SendPut(cl flight.Client, msgs []*flight.FlightData) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := cl.DoPut(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break // the server ended the call; Recv has its status
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Put is a named DoPut the server must refuse with InvalidArgument.
type Put struct {
	Name string
	Msgs []*flight.FlightData
}

// Puts are the DoPuts of issue 10 and the decompression bomb found while
// fixing them; table names the ingest target.
func Puts(mem memory.Allocator, table string) ([]Put, error) {
	plain, nested := Batch(mem, false), Batch(mem, true)
	defer plain.Release()
	defer nested.Release()
	msgs := func(b arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
		m, err := Messages(b, opts...)
		if err != nil {
			panic(err) // writing a valid batch to memory
		}
		m[0].FlightDescriptor = IngestDescriptor(table)
		return m
	}
	var puts []Put

	// No descriptor: a nil-pointer panic inside arrow-go's DoPut.
	m := msgs(plain)
	m[0].FlightDescriptor = nil
	puts = append(puts, Put{"no descriptor", m})

	// The schema's children count (the struct's two fields) set to 2^31-1:
	// arrow-go allocated about 196 GB for it.
	m = msgs(nested)
	if !replaceWords32(m[0].DataHeader, 2, 0x7fffffff) {
		return nil, fmt.Errorf("no children count in the schema message")
	}
	puts = append(puts, Put{"children count", m})

	// Corrupted string offsets (the first are 0, 5, 9): stored as garbage.
	m = msgs(plain)
	i := strings.Index(string(m[1].DataBody), "\x00\x00\x00\x00\x05\x00\x00\x00\x09\x00\x00\x00")
	if i < 0 {
		return nil, fmt.Errorf("string offsets not found in the body")
	}
	binary.LittleEndian.PutUint32(m[1].DataBody[i+4:], 1000)
	puts = append(puts, Put{"string offsets", m})

	// A string that is not UTF-8 ("beta" as "b\xffta"): stored, it would
	// come back from every scan as garbage to a client's decoder.
	m = msgs(plain)
	i = strings.Index(string(m[1].DataBody), "beta")
	if i < 0 {
		return nil, fmt.Errorf("string values not found in the body")
	}
	m[1].DataBody[i+1] = 0xff
	puts = append(puts, Put{"invalid UTF-8", m})

	// A batch claiming 2^40 rows.
	m = msgs(plain)
	for off := 0; off+8 <= len(m[1].DataHeader); off += 8 {
		if binary.LittleEndian.Uint64(m[1].DataHeader[off:]) == 3 {
			binary.LittleEndian.PutUint64(m[1].DataHeader[off:], 1<<40)
		}
	}
	puts = append(puts, Put{"row count", m})

	// LZ4 buffers whose length prefixes claim 1 TB decompressed: arrow-go
	// allocates that before decompressing.
	m = msgs(plain, ipc.WithLZ4())
	body := m[1].DataBody
	for off := 0; off+8 <= len(body); off += 8 {
		if v := int64(binary.LittleEndian.Uint64(body[off:])); v > 0 && v < 64 {
			binary.LittleEndian.PutUint64(body[off:], 1<<40)
		}
	}
	puts = append(puts, Put{"decompression bomb", m})

	// A schema whose struct levels each list the next level twice, by the
	// same offset: 40 levels make 2^40 fields to decode from 2 KB.
	puts = append(puts, Put{"shared children", []*flight.FlightData{{FlightDescriptor: IngestDescriptor(table), DataHeader: nestedSchema(40, 2)}}})

	// Types nested 1.5M deep (48 MB): arrow-go's decoder recurses once
	// per level.
	puts = append(puts, Put{"deep nesting", []*flight.FlightData{{FlightDescriptor: IngestDescriptor(table), DataHeader: nestedSchema(1_500_000, 1)}}})
	return puts, nil
}

// nestedSchema builds an IPC schema message (format/Schema.fbs) of levels
// nested structs, each with fanout children at the same offset.
func nestedSchema(levels, fanout int) []byte {
	const (
		typeInt    = 2
		typeStruct = 13
	)
	b := flatbuffers.NewBuilder(1024)
	field := func(name flatbuffers.UOffsetT, typeType byte, typ flatbuffers.UOffsetT, children flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartObject(7)
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependByteSlot(2, typeType, 0)
		b.PrependUOffsetTSlot(3, typ, 0)
		if children != 0 {
			b.PrependUOffsetTSlot(5, children, 0)
		}
		return b.EndObject()
	}
	name := b.CreateString("x")
	b.StartObject(2) // Int{bitWidth: 64, is_signed: true}
	b.PrependInt32Slot(0, 64, 0)
	b.PrependBoolSlot(1, true, false)
	f := field(name, typeInt, b.EndObject(), 0)
	b.StartObject(0) // Struct_
	st := b.EndObject()
	for range levels {
		b.StartVector(4, fanout, 4)
		for range fanout {
			b.PrependUOffsetT(f)
		}
		f = field(name, typeStruct, st, b.EndVector(fanout))
	}
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(f)
	fields := b.EndVector(1)
	b.StartObject(4) // Schema
	b.PrependUOffsetTSlot(1, fields, 0)
	schema := b.EndObject()
	b.StartObject(5) // Message{version: V5, header: schema}
	b.PrependInt16Slot(0, 4, 0)
	b.PrependByteSlot(1, 1, 0)
	b.PrependUOffsetTSlot(2, schema, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

func replaceWords32(b []byte, old, new uint32) bool {
	found := false
	for off := 0; off+4 <= len(b); off += 4 {
		if binary.LittleEndian.Uint32(b[off:]) == old {
			binary.LittleEndian.PutUint32(b[off:], new)
			found = true
		}
	}
	return found
}

// Statement is a named statement the server must refuse with SQLState.
type Statement struct {
	Name, SQL, SQLState string
}

// Statements are the statements that overflowed the stack, ran for
// minutes (issue 10) or made the server allocate until the kernel killed it
// (10 GB from one REGEXP_REPLACE, 250 GB of a running window LISTAGG, 60 GB
// of one CONCAT_WS, 12 GB of arguments held at once; 2.3 GB and a 285 MB
// schema for 400,000 columns), over
// a table t with a BIGINT column k and two rows; 53200 needs a query memory
// budget well under the machine's.
func Statements() []Statement {
	var rows strings.Builder
	rows.WriteString("(VALUES (0)")
	for i := 1; i < 64; i++ {
		fmt.Fprintf(&rows, ", (%d)", i)
	}
	rows.WriteString(") AS v(x)")
	return []Statement{
		{"10 GB from one REGEXP_REPLACE", "SELECT length(REGEXP_REPLACE(REPEAT('a', 1000000), 'a', REPEAT('b', 10000))) FROM t", "54000"},
		{"10 GB from one REPLACE", "SELECT length(REPLACE(REPEAT('a', 1000000), 'a', REPEAT('b', 10000))) FROM t", "54000"},
		{"4 GB of REPEAT in one batch", "SELECT length(REPEAT('x', 64000000 + x)) FROM " + rows.String(), "54000"},
		{"50 GB of LISTAGG", "SELECT length(LISTAGG(REPEAT('x', 200000 + v.x))) FROM " + rows.String() + ", " + strings.ReplaceAll(rows.String(), "v(x)", "w(x)") + ", t", "54000"},
		{"100 GB of ARRAY_AGG in two groups", "SELECT v.x % 2, CARDINALITY(ARRAY_AGG(REPEAT('x', 200000 + w.x))) FROM " + rows.String() + ", " + strings.ReplaceAll(rows.String(), "v(x)", "w(x)") + ", " + strings.ReplaceAll(rows.String(), "v(x)", "u(x)") + ", t GROUP BY v.x % 2", "53200"},
		{"250 GB of running LISTAGG", "SELECT count(*) FROM (SELECT LISTAGG(REPEAT('x', 100)) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM generate_series(1, 50000) g(x))", "53200"},
		{"60 GB of CONCAT_WS", "SELECT length(CONCAT_WS(REPEAT('x', 60000000)" + strings.Repeat(", 'a'", 1000) + ")) FROM t", "54000"},
		{"12 GB held by GREATEST's 100 arguments", "SELECT length(GREATEST(" + strings.TrimPrefix(strings.Repeat(", REPEAT('x', 60000000 + k - k) || 'a'", 100), ", ") + ")) FROM t", "53200"},
		{"6 TB of PRINTF", "SELECT length(PRINTF(REPEAT('%1$s', 100000), REPEAT('x', 60000000))) FROM t", "54000"},
		{"300,000-term sum", "SELECT 1" + strings.Repeat("+1", 300_000), "54001"},
		{"200,000-term OR", "SELECT k FROM t WHERE k = 0" + strings.Repeat(" OR k = 1", 200_000), "54001"},
		{"1.5M-item IN list", "SELECT k FROM t WHERE k IN (0" + strings.Repeat(", 1", 1_500_000) + ")", "54000"},
		{"10 MB LIKE a 100,000-character pattern with _", "SELECT repeat('a', 10000000) LIKE '%' || repeat('a_', 50000) || 'b' FROM t", "54000"},
		{"10 MB REGEXP_EXTRACT with a 100,000-character pattern", "SELECT REGEXP_EXTRACT(repeat('a', 10000000), repeat('a', 100000) || 'b') FROM t", "54000"},
		{"100,000-way UNION ALL", "SELECT k FROM t" + strings.Repeat(" UNION ALL SELECT k FROM t", 100_000), "54001"},
		{"JSON path 9,000 steps deep", "SELECT JSON_VALUE(repeat('{\"a\":', 9000) || '1' || repeat('}', 9000), '$' || repeat('.a', 9000)) FROM t", "54000"},
		{"400,000-column select list", "SELECT k" + strings.Repeat(", 1", 400_000) + " FROM t", "54011"},
		{"400,000-column VALUES", "SELECT * FROM (VALUES (1" + strings.Repeat(", 1", 400_000) + "))", "54011"},
	}
}

// ViewChain creates views that each name the previous one twice, so that
// each binds twice the views of the one before: the last, the tenth, must
// be refused with SQLSTATE 54001 (without a limit the 25th bound until the
// process ran out of memory).
func ViewChain() (setup []string, last Statement) {
	setup = []string{"CREATE VIEW hv0 AS SELECT 1 AS x"}
	for i := 1; i < 9; i++ {
		setup = append(setup, fmt.Sprintf("CREATE VIEW hv%d AS SELECT x FROM hv%d UNION ALL SELECT x FROM hv%d", i, i-1, i-1))
	}
	return setup, Statement{"views expanding to 1022 references", "CREATE VIEW hv9 AS SELECT x FROM hv8 UNION ALL SELECT x FROM hv8", "54001"}
}
