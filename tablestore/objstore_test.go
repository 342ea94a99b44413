package tablestore_test

import (
	"context"
	"os"
	"testing"

	"github.com/flightd/flightd/internal/s3test"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/tablestore/objfs"
)

// The store's suites that take a warehouse run on a bucket of a local S3
// server too (forEachWarehouse); a child process finds it in its env.
func init() {
	tablestore.ObjectStoreWarehouse = func(t testing.TB) (tablestore.FS, string, []string) {
		srv := s3test.Start(t)
		fsys := srv.FS(t, 8<<20)
		return fsys, "/wh", []string{"TABLESTORE_S3_ENDPOINT=" + srv.Endpoint, "TABLESTORE_S3_BUCKET=" + fsys.Bucket()}
	}
	tablestore.ObjectStoreFromEnv = func() (tablestore.FS, bool, error) {
		endpoint := os.Getenv("TABLESTORE_S3_ENDPOINT")
		if endpoint == "" {
			return nil, false, nil
		}
		c, err := objfs.NewClient(s3test.Config(endpoint))
		if err != nil {
			return nil, true, err
		}
		return objfs.New(context.Background(), c, os.Getenv("TABLESTORE_S3_BUCKET"), nil), true, nil
	}
}
