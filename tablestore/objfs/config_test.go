package objfs_test

import (
	"strings"
	"testing"

	"github.com/flightd/flightd/tablestore/objfs"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, bucket, root, err string }{
		{in: "s3://lake/warehouse", bucket: "lake", root: "/warehouse"},
		{in: "s3://lake/a/b/", bucket: "lake", root: "/a/b"},
		{in: "s3://lake", bucket: "lake", root: "/"},
		{in: "s3:///path", err: "want s3://bucket/path"},
		{in: "gs://lake/path", err: "want s3://bucket/path"},
		{in: "s3://user@lake/path", err: "want s3://bucket/path"},
		{in: "s3://lake/path?x=1", err: "want s3://bucket/path"},
		{in: "s3://la ke/path", err: "invalid character"},
	} {
		bucket, root, err := objfs.ParseURL(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.in)):
			t.Errorf("ParseURL(%q): %v, want an error naming it with %q", c.in, err, c.err)
		case c.err == "" && (err != nil || bucket != c.bucket || root != c.root):
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", c.in, bucket, root, err, c.bucket, c.root)
		}
	}
}

func TestNewClientRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg objfs.Config
		err string
	}{
		{objfs.Config{Endpoint: "ftp://127.0.0.1:9000"}, "want http(s)://host[:port]"},
		{objfs.Config{Endpoint: "http://127.0.0.1:9000/some/path"}, "want http(s)://host[:port]"},
		{objfs.Config{Endpoint: "http://127.0.0.1:9000", AccessKey: "k"}, "needs its secret key"},
		{objfs.Config{Endpoint: "http://127.0.0.1:9000", SecretKey: "s"}, "needs its secret key"},
	} {
		if _, err := objfs.NewClient(c.cfg); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("NewClient(%+v): %v, want an error with %q", c.cfg, err, c.err)
		}
	}
}
