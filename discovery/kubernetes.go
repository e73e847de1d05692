package discovery

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// The service account's files, mounted into every pod that has one.
const (
	DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// DefaultPodLabelSelector selects the pods whose label app is the service's name.
	DefaultPodLabelSelector = "app=%s"
	// DefaultMaxResponseBytes bounds the pod list read from the API server.
	DefaultMaxResponseBytes = 16 << 20
)

// Kubernetes lists the pods of a service through the Kubernetes API server: a thin
// client of its REST interface (GET /api/v1/namespaces/{namespace}/pods with a label
// selector), with no dependency on client-go. It needs, in the pod's namespace, a Role
// that grants get, list and watch on pods, bound to the pod's service account; it
// writes nothing.
//
// A target is a pod in phase Running that is not being deleted (no
// deletionTimestamp) and has an IP: Host is status.podIP; Port is the pod's container
// port named Lookup.PortName when that is set (a pod without such a port is left out;
// Lookup.Protocol is not used), else Port.
//
// Each lookup reads the token file again (projected service-account tokens rotate) and
// the CA file, and opens a new HTTPS connection, closed afterwards: a lookup holds no
// goroutine or connection once it has returned.
//
// The zero value works in a pod: every field has a default.
type Kubernetes struct {
	// APIServer is the API server's base URL; by default
	// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the variables
	// Kubernetes sets in every container.
	APIServer string
	// TokenFile holds the bearer token; default DefaultServiceAccountDir/token.
	TokenFile string
	// CAFile holds the PEM certificates the API server's certificate is checked
	// against; default DefaultServiceAccountDir/ca.crt.
	CAFile string
	// Namespace is where the pods are listed; by default the content of
	// DefaultServiceAccountDir/namespace, the pod's own namespace.
	Namespace string
	// NamespaceFile is read when Namespace is empty; default
	// DefaultServiceAccountDir/namespace.
	NamespaceFile string
	// PodLabelSelector is the label selector, with %s replaced by Lookup.Service
	// (every occurrence); default DefaultPodLabelSelector, "app=%s".
	PodLabelSelector string
	// Port is given to the targets when Lookup.PortName is empty; 0 (the default)
	// gives targets without a port.
	Port int
	// MaxResponseBytes bounds the answer read; default DefaultMaxResponseBytes. A
	// larger answer is an error: narrow the label selector.
	MaxResponseBytes int64
}

// Lookup lists the pods that match the label selector and returns their addresses,
// sorted and without duplicates. No matching pod, or none Running with the named port,
// gives ErrNotFound (wrapped). A 401 or 403, a failed request, an answer that is not a
// pod list, or one larger than MaxResponseBytes gives an error that says which.
func (k Kubernetes) Lookup(ctx context.Context, l Lookup) ([]Target, error) {
	if l.Service == "" {
		return nil, errors.New("discovery: kubernetes: Lookup.Service is empty")
	}
	base, err := k.apiServer()
	if err != nil {
		return nil, err
	}
	ns, err := k.namespace()
	if err != nil {
		return nil, err
	}
	token, err := readTrimmed(k.file(k.TokenFile, "token"), "service account token")
	if err != nil {
		return nil, err
	}
	client, err := k.client()
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()

	selector := strings.ReplaceAll(cmp.Or(k.PodLabelSelector, DefaultPodLabelSelector), "%s", l.Service)
	u := base + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods?labelSelector=" + url.QueryEscape(selector)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: listing pods: %w", err)
	}
	defer resp.Body.Close()
	limit := k.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: reading the pod list: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("discovery: kubernetes: the pod list is larger than %d bytes; narrow the label selector %q", limit, selector)
	}
	if err := statusError(resp.StatusCode, body, ns); err != nil {
		return nil, err
	}
	var list podList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: the API server's answer is not JSON (content type %q): %w",
			resp.Header.Get("Content-Type"), err)
	}
	if list.Kind != "PodList" {
		return nil, fmt.Errorf("discovery: kubernetes: the API server's answer is a %q, not a PodList", list.Kind)
	}
	ts := list.targets(l.PortName, k.Port)
	if len(ts) == 0 {
		what := "Running pod"
		if l.PortName != "" {
			what += " with a container port named " + l.PortName
		}
		return nil, fmt.Errorf("%w: kubernetes: no %s matches %q in namespace %s (%d pods listed)",
			ErrNotFound, what, selector, ns, len(list.Items))
	}
	return ts, nil
}

func (k Kubernetes) file(set, name string) string {
	if set != "" {
		return set
	}
	return DefaultServiceAccountDir + "/" + name
}

func (k Kubernetes) apiServer() (string, error) {
	if k.APIServer != "" {
		return strings.TrimSuffix(k.APIServer, "/"), nil
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return "", errors.New("discovery: kubernetes: KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not set (not in a pod?); set APIServer")
	}
	return "https://" + net.JoinHostPort(host, port), nil
}

func (k Kubernetes) namespace() (string, error) {
	if k.Namespace != "" {
		return k.Namespace, nil
	}
	return readTrimmed(k.file(k.NamespaceFile, "namespace"), "namespace")
}

// client returns an HTTPS client that trusts the CA file and keeps no connection.
func (k Kubernetes) client() (*http.Client, error) {
	caFile := k.file(k.CAFile, "ca.crt")
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: reading the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("discovery: kubernetes: the CA file %s holds no PEM certificate", caFile)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
		Proxy:             nil, // the API server is reached directly, never through HTTP_PROXY
	}}, nil
}

// statusError explains an answer other than 200.
func statusError(code int, body []byte, ns string) error {
	if code == http.StatusOK {
		return nil
	}
	msg := apiMessage(body)
	switch code {
	case http.StatusUnauthorized:
		return fmt.Errorf("discovery: kubernetes: the API server rejected the service account token (401 Unauthorized): %s", msg)
	case http.StatusForbidden:
		return fmt.Errorf("discovery: kubernetes: the service account may not list pods in namespace %s (403 Forbidden): "+
			"bind it to a Role that grants get, list and watch on pods (RBAC): %s", ns, msg)
	default:
		return fmt.Errorf("discovery: kubernetes: listing pods in namespace %s: %d %s: %s", ns, code, http.StatusText(code), msg)
	}
}

// apiMessage returns the message of a Kubernetes Status answer, or the start of the
// body.
func apiMessage(body []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	b := bytes.TrimSpace(body)
	if len(b) > 200 {
		b = append(b[:200:200], "..."...)
	}
	return fmt.Sprintf("%q", b)
}

func readTrimmed(path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("discovery: kubernetes: reading the %s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("discovery: kubernetes: the %s file %s is empty", what, path)
	}
	return s, nil
}
