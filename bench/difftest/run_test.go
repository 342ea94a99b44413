package difftest

import (
	"errors"
	"testing"
)

func TestDuckDBErrorClass(t *testing.T) {
	for msg, want := range map[string]string{
		`Parser Error: syntax error at or near "FROM"`:                   "42",
		`Binder Error: Referenced column "x" not found in FROM clause!`:  "42",
		`Catalog Error: Table with name t9 does not exist!`:              "42",
		`Conversion Error: Could not convert string 'a' to INT32`:        "22",
		`Out of Range Error: Overflow in multiplication of INT64`:        "22",
		`Invalid Input Error: Division by zero!`:                         "22",
		`Not implemented Error: unsupported type`:                        "0A",
		`INTERNAL Error: Attempted to access index 3 within vector of 2`: "XX",
	} {
		if got := duckdbErrorClass(errors.New(msg)); got != want {
			t.Errorf("%q: class %s, want %s", msg, got, want)
		}
	}
}
