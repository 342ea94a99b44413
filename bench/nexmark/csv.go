package nexmark

import (
	"bufio"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// WriteCSV writes the first total events of cfg, in emission order, as
// person.csv, auction.csv and bid.csv (the views' columns, times as
// yyyy-MM-dd HH:mm:ss.SSS in UTC) and side_input.csv into dir, for a
// peer engine to read the same events.
func WriteCSV(dir string, cfg Config, total int64) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var files [4]*os.File
	var ws [4]*csv.Writer
	var bufs [4]*bufio.Writer
	for i, name := range []string{"person", "auction", "bid", "side_input"} {
		f, err := os.Create(filepath.Join(dir, name+".csv"))
		if err != nil {
			return err
		}
		files[i] = f
		bufs[i] = bufio.NewWriterSize(f, 1<<20)
		ws[i] = csv.NewWriter(bufs[i])
	}
	defer func() {
		for i, f := range files {
			if f == nil {
				continue
			}
			ws[i].Flush()
			err = errors.Join(err, ws[i].Error(), bufs[i].Flush(), f.Close())
		}
	}()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	ts := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }
	src := NewSource(cfg, total)
	for {
		events := src.Next(10_000)
		if len(events) == 0 {
			break
		}
		for _, e := range events {
			var rec []string
			switch e.Kind {
			case KindPerson:
				p := e.Person
				rec = []string{i64(p.ID), p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, ts(p.DateTime), p.Extra}
			case KindAuction:
				a := e.Auction
				rec = []string{i64(a.ID), a.ItemName, a.Description, i64(a.InitialBid), i64(a.Reserve), ts(a.DateTime),
					ts(a.Expires), i64(a.Seller), i64(a.Category), a.Extra}
			default:
				b := e.Bid
				rec = []string{i64(b.Auction), i64(b.Bidder), i64(b.Price), b.Channel, b.URL, ts(b.DateTime), b.Extra}
			}
			if err := ws[e.Kind].Write(rec); err != nil {
				return err
			}
		}
	}
	for i := range SideInputRows {
		if err := ws[3].Write([]string{strconv.Itoa(i), strconv.Itoa(i)}); err != nil {
			return err
		}
	}
	return nil
}
