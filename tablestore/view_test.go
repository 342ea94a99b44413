package tablestore

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestViews(t *testing.T) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	id := Ident{"db", "v"}
	if err := s.CreateView(ctx, id, ViewDef{Query: "SELECT 1"}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateView(ctx, id, ViewDef{Query: "SELECT 2"}, false); !errors.Is(err, ErrViewExists) {
		t.Fatalf("second create: want ErrViewExists, got %v", err)
	}
	if err := s.CreateView(ctx, id, ViewDef{Query: "SELECT 3", Columns: []string{"x"}}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateView(ctx, Ident{"db", "t"}, ViewDef{Query: "SELECT 1"}, true); !errors.Is(err, ErrTableExists) {
		t.Fatalf("view over a table name: want ErrTableExists, got %v", err)
	}
	for _, bad := range []struct {
		id  Ident
		def ViewDef
	}{
		{Ident{"db", "w"}, ViewDef{}},
		{Ident{"db", "_w"}, ViewDef{Query: "SELECT 1"}},
		{Ident{"nodb", "w"}, ViewDef{Query: "SELECT 1"}},
	} {
		if err := s.CreateView(ctx, bad.id, bad.def, false); err == nil {
			t.Errorf("create %s %+v: want an error", bad.id, bad.def)
		}
	}
	// Views are not tables, and survive a restart.
	if tables, _ := s.Tables(ctx, "db"); !slices.Equal(tables, []string{"t"}) {
		t.Fatalf("tables %v", tables)
	}
	s2 := openStore(t, NewLocalFS(), dir, mem)
	defer s2.Close()
	def, err := s2.View(ctx, id)
	if err != nil || def.Query != "SELECT 3" || !slices.Equal(def.Columns, []string{"x"}) || def.TimeMillis == 0 {
		t.Fatalf("reopened view: %+v %v", def, err)
	}
	if views, err := s2.Views(ctx, "db"); err != nil || !slices.Equal(views, []string{"v"}) {
		t.Fatalf("views %v %v", views, err)
	}
	if err := s2.DropView(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.View(ctx, id); !errors.Is(err, ErrViewNotFound) {
		t.Fatalf("dropped view: want ErrViewNotFound, got %v", err)
	}
	if err := s2.DropView(ctx, id, false); !errors.Is(err, ErrViewNotFound) {
		t.Fatalf("drop twice: want ErrViewNotFound, got %v", err)
	}
	if err := s2.DropView(ctx, id, true); err != nil {
		t.Fatalf("drop if exists: %v", err)
	}
	if views, err := s2.Views(ctx, "db"); err != nil || len(views) != 0 {
		t.Fatalf("views after drop %v %v", views, err)
	}
}
