package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMaterializedOwnerGrants: through a real flightd with an auth file, a
// materialized table refreshes with the grants of the user who created it.
// When a restart with a new auth file takes that user's read on the
// source away, the refreshes stop with the reason in last_error (the table
// keeps its answer); given back, they resume.
func TestMaterializedOwnerGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	auth := filepath.Join(dir, "users")
	writeAuth := func(aliceReadsSrc bool) {
		t.Helper()
		text := "root:rootpw\nalice:alicepw\ngrant: root admin *\ngrant: alice admin sales\n"
		if aliceReadsSrc {
			text += "grant: alice read src\n"
		}
		if err := os.WriteFile(auth, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeAuth(true)
	p := start(t, bin, filepath.Join(dir, "data"), "-auth-file", auth)
	root, closeRoot := p.connectAs(t, "root", "rootpw")
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE DATABASE src",
		"CREATE TABLE src.t (k BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)", "INSERT INTO src.t VALUES (1), (2)",
	} {
		if err := execSQL(root, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeRoot()
	alice, closeAlice := p.connectAs(t, "alice", "alicepw")
	if err := execSQL(alice, "CREATE MATERIALIZED TABLE sales.m FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = FULL AS SELECT k FROM src.t"); err != nil {
		t.Fatal(err)
	}
	closeAlice()

	// restart runs flightd again after the auth file changed, inserts k
	// into the source as root, and waits until sales.m reads want (as
	// "k,k,...") with last_error containing wantErr ("": none).
	restart := func(k, want, wantErr string) {
		t.Helper()
		if err := p.terminate(t); err != nil {
			t.Fatalf("flightd did not exit cleanly: %v", err)
		}
		p = start(t, p.bin, p.dataDir, p.flags...)
		root, closeRoot := p.connectAs(t, "root", "rootpw")
		defer closeRoot()
		if err := execSQL(root, "INSERT INTO src.t VALUES ("+k+")"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			got := strings.Join(rowsOf(t, root, "SELECT k FROM sales.m", ""), ",")
			st := rowsOf(t, root, "SELECT coalesce(last_error, '') FROM sys.materialized_tables WHERE table_name = 'm'", "")
			if got == want && len(st) == 1 && (wantErr == "" && st[0] == "" || wantErr != "" && strings.Contains(st[0], wantErr)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("sales.m: got %s with last error %q, want %s with %q", got, st, want, wantErr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	writeAuth(false)
	restart("3", "1,2", `user "alice" has no read privilege on database "src"`)
	writeAuth(true)
	restart("4", "1,2,3,4", "")
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly: %v", err)
	}
}
