package flightsql_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"

	"github.com/flightd/flightd/flightsql"
)

func TestBasicAuth(t *testing.T) {
	ts := startServer(t, flightsql.Options{Users: map[string]string{"alice": "s3cret"}})

	// Handshake with Basic, then the bearer token.
	cnxn := ts.connect(t, map[string]string{adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "s3cret"})
	wantRows(t, query(t, cnxn, `SHOW DATABASES`), "default", "temp")

	// Basic on every call, for tools that cannot do the token exchange.
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	cnxn2 := ts.connect(t, map[string]string{adbcflightsql.OptionAuthorizationHeader: basic})
	wantRows(t, query(t, cnxn2, `SHOW DATABASES`), "default", "temp")

	for name, opts := range map[string]map[string]string{
		"no credentials": nil,
		"wrong password": {adbcflightsql.OptionAuthorizationHeader: "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:nope"))},
		"unknown token":  {adbcflightsql.OptionAuthorizationHeader: "Bearer 0123"},
	} {
		c := ts.connect(t, opts)
		_, err := tryQuery(c, `SHOW DATABASES`)
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusUnauthenticated {
			t.Errorf("%s: err %v, want Unauthenticated", name, err)
		}
	}
}

func TestTLSAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCA(t)
	serverCert, serverKey := issue(t, ca, caKey, "127.0.0.1", false)
	clientCert, clientKey := issue(t, ca, caKey, "client", true)
	caPEM := writePEM(t, dir, "ca.pem", "CERTIFICATE", ca.Raw)
	certFile := writePEM(t, dir, "server.pem", "CERTIFICATE", serverCert)
	keyFile := writePEM(t, dir, "server.key", "EC PRIVATE KEY", serverKey)

	ts := startServer(t, flightsql.Options{TLSCertFile: certFile, TLSKeyFile: keyFile})
	root := readFile(t, caPEM)
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionSSLRootCerts: root})
	wantRows(t, query(t, cnxn, `SHOW DATABASES`), "default", "temp")

	mts := startServer(t, flightsql.Options{TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caPEM})
	withCert := mts.connect(t, map[string]string{
		adbcflightsql.OptionSSLRootCerts:   root,
		adbcflightsql.OptionMTLSCertChain:  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCert})),
		adbcflightsql.OptionMTLSPrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: clientKey})),
	})
	wantRows(t, query(t, withCert, `SHOW DATABASES`), "default", "temp")
	without := mts.connect(t, map[string]string{adbcflightsql.OptionSSLRootCerts: root})
	if _, err := tryQuery(without, `SHOW DATABASES`); err == nil {
		t.Fatal("mTLS server accepted a client without a certificate")
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flightd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// issue returns a DER certificate signed by the CA and its DER EC key.
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, client bool) ([]byte, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP(name)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der, keyDER
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
