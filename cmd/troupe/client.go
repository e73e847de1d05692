package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/troupe-go/troupe/management"
)

// maxAnswerBytes bounds the body of an answer the client reads.
const maxAnswerBytes = 16 << 20

// client calls the routes of one management server. It has one method per route; each
// returns the typed answer (the management package's view types) with the body as it
// came, which -json prints unchanged.
type client struct {
	// base is the server's URL without a trailing slash (http://127.0.0.1:8558).
	base string
	// token is the bearer token sent to the routes that change the cluster ("" for
	// none).
	token string
	http  *http.Client
}

// reply is a decoded answer and its body as the server sent it.
type reply[T any] struct {
	Value T
	Body  []byte
}

// serverError is an answer with a status other than 2xx.
type serverError struct {
	Method  string
	URL     string
	Status  int
	Message string // the "error" field of the JSON body, or the body's start
	// TokenSent says whether the request carried a bearer token (for the message of a
	// 401).
	TokenSent bool
}

func (e *serverError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Message)
}

// unreachableError is a request that got no answer: the node is down, the URL is
// wrong, TLS failed, or the time ran out.
type unreachableError struct {
	URL string
	Err error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the management server at %s: %v", e.URL, e.Err)
}

func (e *unreachableError) Unwrap() error { return e.Err }

// badAnswerError is a 2xx answer that is not what the route answers (not JSON, or not
// a Troupe management server at the URL).
type badAnswerError struct {
	URL string
	Err error
}

func (e *badAnswerError) Error() string {
	return fmt.Sprintf("%s: the answer is not a Troupe management server's (is -url right?): %v", e.URL, e.Err)
}

// memberPath is the route of the member at addr (troupe://system@host:port or
// system@host:port).
func memberPath(addr string) string {
	return "/cluster/members/" + url.PathEscape(addr)
}

// Members answers GET /cluster/members.
func (c *client) Members(ctx context.Context) (reply[management.MembersView], error) {
	return call[management.MembersView](ctx, c, http.MethodGet, "/cluster/members", nil)
}

// Member answers GET /cluster/members/{address}.
func (c *client) Member(ctx context.Context, addr string) (reply[management.MemberView], error) {
	return call[management.MemberView](ctx, c, http.MethodGet, memberPath(addr), nil)
}

// Leave asks the member at addr to leave: PUT /cluster/members/{address} with
// operation=Leave.
func (c *client) Leave(ctx context.Context, addr string) (reply[management.MessageView], error) {
	return call[management.MessageView](ctx, c, http.MethodPut, memberPath(addr), url.Values{"operation": {"Leave"}})
}

// Down downs the member at addr: PUT /cluster/members/{address} with operation=Down.
func (c *client) Down(ctx context.Context, addr string) (reply[management.MessageView], error) {
	return call[management.MessageView](ctx, c, http.MethodPut, memberPath(addr), url.Values{"operation": {"Down"}})
}

// EntityTypes answers GET /cluster/shards.
func (c *client) EntityTypes(ctx context.Context) (reply[management.EntityTypesView], error) {
	return call[management.EntityTypesView](ctx, c, http.MethodGet, "/cluster/shards", nil)
}

// Region answers GET /cluster/shards/{type}: the asked node's shards of the type.
func (c *client) Region(ctx context.Context, typeName string) (reply[management.RegionView], error) {
	return call[management.RegionView](ctx, c, http.MethodGet, "/cluster/shards/"+url.PathEscape(typeName), nil)
}

// ShardStats answers GET /cluster/shards/{type}/stats: the type's shards on every
// node.
func (c *client) ShardStats(ctx context.Context, typeName string) (reply[management.ClusterShardsView], error) {
	return call[management.ClusterShardsView](ctx, c, http.MethodGet, "/cluster/shards/"+url.PathEscape(typeName)+"/stats", nil)
}

// Singletons answers GET /cluster/singletons.
func (c *client) Singletons(ctx context.Context) (reply[management.SingletonsView], error) {
	return call[management.SingletonsView](ctx, c, http.MethodGet, "/cluster/singletons", nil)
}

// do sends a request (a form body when form is not nil) and returns the answer's body
// when its status is 2xx, a *serverError for another status, and an
// *unreachableError when no answer came.
func (c *client) do(ctx context.Context, method, path string, form url.Values) (*http.Response, error) {
	u := c.base + path
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	writes := method != http.MethodGet
	if writes && c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // interrupted, not unreachable
		}
		return nil, &unreachableError{URL: c.base, Err: unwrapURLError(err)}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		return nil, &serverError{Method: method, URL: u, Status: resp.StatusCode, Message: errorMessage(b),
			TokenSent: writes && c.token != ""}
	}
	return resp, nil
}

// call sends a request and decodes its JSON answer into T.
func call[T any](ctx context.Context, c *client, method, path string, form url.Values) (reply[T], error) {
	var r reply[T]
	resp, err := c.do(ctx, method, path, form)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return r, ctx.Err()
		}
		return r, &unreachableError{URL: c.base, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if err := json.Unmarshal(b, &r.Value); err != nil {
		return r, &badAnswerError{URL: c.base + path, Err: err}
	}
	r.Body = b
	return r, nil
}

// errorMessage returns the "error" field of an error answer, or the body's start when
// it is not the management server's JSON.
func errorMessage(body []byte) string {
	var v struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error != "" {
		return v.Error
	}
	s := strings.TrimSpace(string(bytes.ToValidUTF8(body, nil)))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(no message)"
	}
	return s
}

// unwrapURLError drops the *url.Error around a transport error: the message names the
// URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
