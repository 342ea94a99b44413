package flightsql

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// Options configure the gRPC side of the endpoint.
type Options struct {
	// Users enables authentication (Basic, exchanged for bearer tokens)
	// when non-empty: user name -> password.
	Users map[string]string
	// TLSCertFile and TLSKeyFile enable TLS; ClientCAFile additionally
	// requires client certificates signed by that CA (mTLS).
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// MaxMessageBytes bounds one incoming gRPC message (DoPut batches).
	MaxMessageBytes int
	// KeepaliveInterval is how often the server pings idle connections so
	// that proxies keep long streams open.
	KeepaliveInterval time.Duration
}

// DefaultMaxMessageBytes is the default bound on one incoming message.
const DefaultMaxMessageBytes = 256 << 20

// NewFlightServer assembles a flight.Server serving srv: session cookies,
// optional auth, TLS, keepalive and message size limits. Call Init or
// InitListener, then Serve.
func NewFlightServer(srv *Server, opts Options) (flight.Server, error) {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.KeepaliveInterval <= 0 {
		opts.KeepaliveInterval = 30 * time.Second
	}
	grpcOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recoverUnary),
		grpc.ChainStreamInterceptor(recoverStream),
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: opts.KeepaliveInterval, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	if opts.TLSCertFile != "" || opts.TLSKeyFile != "" {
		creds, err := tlsCredentials(opts)
		if err != nil {
			return nil, err
		}
		grpcOpts = append(grpcOpts, grpc.Creds(creds))
	} else if opts.ClientCAFile != "" {
		return nil, fmt.Errorf("a client CA (mTLS) needs a server certificate and key too")
	}
	var mw []flight.ServerMiddleware
	if len(opts.Users) > 0 {
		mw = append(mw, newAuthenticator(opts.Users).middleware())
	}
	mw = append(mw, SessionMiddleware())
	fs := flight.NewServerWithMiddleware(mw, grpcOpts...)
	fs.RegisterFlightService(srv.FlightService())
	return fs, nil
}

func tlsCredentials(opts Options) (credentials.TransportCredentials, error) {
	cert, err := tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s / key %s: %w", opts.TLSCertFile, opts.TLSKeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if opts.ClientCAFile != "" {
		pem, err := os.ReadFile(opts.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("read client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s holds no PEM certificate", opts.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}
