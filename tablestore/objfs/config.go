package objfs

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where the object store is and who we are there. Empty
// fields fall back to the usual AWS environment variables, then to
// defaults.
type Config struct {
	// Endpoint is a URL (http://127.0.0.1:8333) or host[:port] (https);
	// else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS S3.
	Endpoint string
	// Region: else AWS_REGION, AWS_DEFAULT_REGION, then us-east-1.
	Region string
	// AccessKey and SecretKey (with SessionToken): else AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, then the shared
	// credentials file (~/.aws/credentials, AWS_PROFILE).
	AccessKey, SecretKey, SessionToken string
	// Transport carries the requests; nil is minio's default. Tests wrap
	// it to count requests.
	Transport http.RoundTripper
}

// ParseURL splits s3://bucket/path into the bucket and the warehouse root
// inside it.
func ParseURL(s string) (bucket, root string, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("warehouse URL %q: %w", s, err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("warehouse URL %q: want s3://bucket/path", s)
	}
	return u.Host, "/" + strings.Trim(u.Path, "/"), nil
}

func firstEnv(v string, names ...string) string {
	for _, n := range names {
		if v != "" {
			return v
		}
		v = os.Getenv(n)
	}
	return v
}

// NewClient connects (lazily: no request is made) to the object store.
func NewClient(cfg Config) (*minio.Client, error) {
	endpoint := firstEnv(cfg.Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	lookup := minio.BucketLookupPath // local servers have no per-bucket host names
	if endpoint == "" {
		endpoint, lookup = "s3.amazonaws.com", minio.BucketLookupAuto
	}
	secure := true
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("object store endpoint %q: want http(s)://host[:port]", endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}})
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		if cfg.AccessKey == "" || cfg.SecretKey == "" {
			return nil, fmt.Errorf("object store credentials: an access key needs its secret key and the other way round")
		}
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	}
	region := firstEnv(cfg.Region, "AWS_REGION", "AWS_DEFAULT_REGION")
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: lookup, Transport: cfg.Transport})
	if err != nil {
		return nil, fmt.Errorf("object store endpoint %q: %w", endpoint, err)
	}
	return c, nil
}
