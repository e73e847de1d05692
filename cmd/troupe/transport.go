package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"
)

// tlsConfig returns the TLS configuration the flags ask for, or nil when they ask for
// none (the system's roots then serve an https URL).
func (o options) tlsConfig() (*tls.Config, error) {
	if o.cacert == "" && o.cert == "" && o.key == "" && !o.insecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.insecure} //nolint:gosec // -insecure asks for it
	if o.cacert != "" {
		pem, err := os.ReadFile(o.cacert)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("-cacert: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &usageError{fmt.Sprintf("-cacert %s: no PEM certificate in it", o.cacert)}
		}
		cfg.RootCAs = pool
	}
	if (o.cert == "") != (o.key == "") {
		return nil, &usageError{"-cert and -key go together"}
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("-cert and -key: %v", err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// dialer returns a dial function that gives up after timeout.
func dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return d.DialContext
}
