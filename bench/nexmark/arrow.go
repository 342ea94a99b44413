package nexmark

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var tsMillis = &arrow.TimestampType{Unit: arrow.Millisecond}

func field(name string, t arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: t} }

// The three entities' columns, named as the DDL's views name them.
var (
	PersonSchema = arrow.NewSchema([]arrow.Field{
		field("id", arrow.PrimitiveTypes.Int64), field("name", arrow.BinaryTypes.String),
		field("emailAddress", arrow.BinaryTypes.String), field("creditCard", arrow.BinaryTypes.String),
		field("city", arrow.BinaryTypes.String), field("state", arrow.BinaryTypes.String),
		field("dateTime", tsMillis), field("extra", arrow.BinaryTypes.String),
	}, nil)
	AuctionSchema = arrow.NewSchema([]arrow.Field{
		field("id", arrow.PrimitiveTypes.Int64), field("itemName", arrow.BinaryTypes.String),
		field("description", arrow.BinaryTypes.String), field("initialBid", arrow.PrimitiveTypes.Int64),
		field("reserve", arrow.PrimitiveTypes.Int64), field("dateTime", tsMillis), field("expires", tsMillis),
		field("seller", arrow.PrimitiveTypes.Int64), field("category", arrow.PrimitiveTypes.Int64),
		field("extra", arrow.BinaryTypes.String),
	}, nil)
	BidSchema = arrow.NewSchema([]arrow.Field{
		field("auction", arrow.PrimitiveTypes.Int64), field("bidder", arrow.PrimitiveTypes.Int64),
		field("price", arrow.PrimitiveTypes.Int64), field("channel", arrow.BinaryTypes.String),
		field("url", arrow.BinaryTypes.String), field("dateTime", tsMillis), field("extra", arrow.BinaryTypes.String),
	}, nil)
)

// Batches holds one batch per entity (person, auction, bid, in KindPerson
// order). The caller releases them.
type Batches [3]arrow.RecordBatch

// Release releases the batches.
func (b Batches) Release() {
	for _, r := range b {
		r.Release()
	}
}

// NewBatches puts events into one batch per entity, in the events' order.
func NewBatches(mem memory.Allocator, events []Event) Batches {
	pb := array.NewRecordBuilder(mem, PersonSchema)
	ab := array.NewRecordBuilder(mem, AuctionSchema)
	bb := array.NewRecordBuilder(mem, BidSchema)
	defer pb.Release()
	defer ab.Release()
	defer bb.Release()
	str := func(b *array.RecordBuilder, i int, s string) { b.Field(i).(*array.StringBuilder).Append(s) }
	num := func(b *array.RecordBuilder, i int, v int64) { b.Field(i).(*array.Int64Builder).Append(v) }
	ts := func(b *array.RecordBuilder, i int, v int64) {
		b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
	}
	for i := range events {
		switch e := &events[i]; e.Kind {
		case KindPerson:
			p := &e.Person
			num(pb, 0, p.ID)
			str(pb, 1, p.Name)
			str(pb, 2, p.EmailAddress)
			str(pb, 3, p.CreditCard)
			str(pb, 4, p.City)
			str(pb, 5, p.State)
			ts(pb, 6, p.DateTime)
			str(pb, 7, p.Extra)
		case KindAuction:
			a := &e.Auction
			num(ab, 0, a.ID)
			str(ab, 1, a.ItemName)
			str(ab, 2, a.Description)
			num(ab, 3, a.InitialBid)
			num(ab, 4, a.Reserve)
			ts(ab, 5, a.DateTime)
			ts(ab, 6, a.Expires)
			num(ab, 7, a.Seller)
			num(ab, 8, a.Category)
			str(ab, 9, a.Extra)
		default:
			b := &e.Bid
			num(bb, 0, b.Auction)
			num(bb, 1, b.Bidder)
			num(bb, 2, b.Price)
			str(bb, 3, b.Channel)
			str(bb, 4, b.URL)
			ts(bb, 5, b.DateTime)
			str(bb, 6, b.Extra)
		}
	}
	return Batches{pb.NewRecordBatch(), ab.NewRecordBatch(), bb.NewRecordBatch()}
}
