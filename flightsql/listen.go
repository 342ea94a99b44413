package flightsql

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// Options configure the gRPC side of the endpoint.
type Options struct {
	// Users enables authentication (Basic, exchanged for bearer tokens)
	// when non-empty: user name -> password, or its bcrypt hash ($2a$,
	// $2b$ or $2y$). An empty password is refused.
	Users map[string]string
	// Grants say what each user may do when authentication is on (see
	// ReadAuthFile); a user without grants may only authenticate.
	Grants []Grant
	// Key signs bearer tokens and query tickets (HMAC-SHA256); servers that
	// share it accept each other's. Empty: a random key for this process.
	Key []byte
	// TokenLifetime is how long a bearer token stays valid
	// (DefaultTokenLifetime if zero).
	TokenLifetime time.Duration
	// MaxConnectionIdle closes a connection with no call running for this
	// long (DefaultMaxConnectionIdle if zero); clients reconnect on their
	// next call.
	MaxConnectionIdle time.Duration
	// HandshakeTimeout closes a connection that has not completed its TLS
	// and HTTP/2 handshake within it (DefaultHandshakeTimeout if zero).
	HandshakeTimeout time.Duration
	// TLSCertFile and TLSKeyFile enable TLS; ClientCAFile additionally
	// requires client certificates signed by that CA (mTLS).
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// MaxMessageBytes bounds one incoming gRPC message (DoPut batches).
	MaxMessageBytes int
	// KeepaliveInterval is how often the server pings idle connections so
	// that proxies keep long streams open.
	KeepaliveInterval time.Duration
}

// Defaults of Options.
const (
	DefaultMaxMessageBytes   = 256 << 20
	DefaultMaxConnectionIdle = 5 * time.Minute
	DefaultHandshakeTimeout  = 10 * time.Second
)

// NewFlightServer assembles a flight.Server serving srv: session cookies,
// optional auth, TLS, keepalive and message size limits. Call Init or
// InitListener, then Serve.
func NewFlightServer(srv *Server, opts Options) (*FlightServer, error) {
	orDefault(&opts.MaxMessageBytes, DefaultMaxMessageBytes)
	orDefault(&opts.KeepaliveInterval, 30*time.Second)
	orDefault(&opts.MaxConnectionIdle, DefaultMaxConnectionIdle)
	orDefault(&opts.HandshakeTimeout, DefaultHandshakeTimeout)
	orDefault(&opts.TokenLifetime, DefaultTokenLifetime)
	if len(opts.Key) > 0 {
		srv.key = opts.Key
	}
	grpcOpts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(newFlightCodec()),
		grpc.ChainUnaryInterceptor(recoverUnary),
		grpc.ChainStreamInterceptor(recoverStream),
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.ConnectionTimeout(opts.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: opts.KeepaliveInterval, Timeout: 20 * time.Second, MaxConnectionIdle: opts.MaxConnectionIdle}),
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
		a, err := newAuthenticator(opts.Users, srv.key, opts.TokenLifetime)
		if err != nil {
			return nil, err
		}
		mw = append(mw, a.middleware())
		srv.grants = newGrants(opts.Grants)
	}
	mw = append(mw, SessionMiddleware())
	var unary []grpc.UnaryServerInterceptor
	var stream []grpc.StreamServerInterceptor
	for _, m := range mw {
		if m.Unary != nil {
			unary = append(unary, m.Unary)
		}
		if m.Stream != nil {
			stream = append(stream, m.Stream)
		}
	}
	grpcOpts = append(grpcOpts, grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	fs := &FlightServer{Server: grpc.NewServer(grpcOpts...)}
	fs.RegisterFlightService(srv.FlightService())
	return fs, nil
}

// FlightServer is the flight.Server of NewFlightServer, built on its own
// grpc.Server rather than flight.NewServerWithMiddleware's so that it can
// also Stop: Shutdown waits for every running call, and one that never
// ends (a client that stops sending mid-DoPut, a computation that does
// not watch its context) would hold the process forever.
type FlightServer struct {
	*grpc.Server // Stop, RegisterService, GetServiceInfo
	lis          net.Listener
}

var _ flight.Server = (*FlightServer)(nil)

// Init listens on addr.
func (s *FlightServer) Init(addr string) (err error) {
	s.lis, err = net.Listen("tcp", addr)
	return err
}

// InitListener serves on lis.
func (s *FlightServer) InitListener(lis net.Listener) { s.lis = lis }

// Addr is the address served.
func (s *FlightServer) Addr() net.Addr { return s.lis.Addr() }

// SetShutdownOnSignals shuts the server down gracefully on any of sig.
func (s *FlightServer) SetShutdownOnSignals(sig ...os.Signal) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, sig...)
	go func() {
		<-c
		s.GracefulStop()
	}()
}

// Serve serves until Shutdown or Stop (then returning nil) or until
// accepting fails.
func (s *FlightServer) Serve() error { return s.Server.Serve(s.lis) }

// Shutdown stops accepting calls and waits for the running ones to end.
func (s *FlightServer) Shutdown() { s.GracefulStop() }

// RegisterFlightService serves svc.
func (s *FlightServer) RegisterFlightService(svc flight.FlightServer) {
	flight.RegisterFlightServiceServer(s.Server, svc)
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

// Listen listens on addr and accepts at most max connections at once
// (unlimited if max <= 0); beyond that a new connection is closed at once,
// so the client fails fast instead of waiting in the accept queue.
func Listen(addr string, max int) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil || max <= 0 {
		return lis, err
	}
	return &limitListener{Listener: lis, slots: make(chan struct{}, max)}, nil
}

type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			_ = c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
