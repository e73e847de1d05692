package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/troupe-go/troupe/management"
)

// errStreamEnded is the end of an event stream that the server closed.
var errStreamEnded = errors.New("the server ended the event stream (its node stopped, or the client fell behind)")

// maxEventBytes bounds one line of an event stream.
const maxEventBytes = 1 << 20

// Events follows GET /cluster/events (only the given types, when there are some):
// opened is called once the server has opened the stream, then each with every event
// and its JSON data as it came. It returns ctx's error when ctx ends, errStreamEnded
// when the server ends the stream, and each's error when each fails.
func (c *client) Events(ctx context.Context, types []string, opened func(), each func(management.Event, []byte) error) error {
	path := "/cluster/events"
	if len(types) > 0 {
		path += "?" + url.Values{"type": {strings.Join(types, ",")}}.Encode()
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return &badAnswerError{URL: c.base + path, Err: fmt.Errorf("content type %q, want text/event-stream", ct)}
	}
	opened()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxEventBytes)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0: // the end of an event
			if len(data) == 0 {
				continue
			}
			var ev management.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				return &badAnswerError{URL: c.base + path, Err: fmt.Errorf("an event's data: %w", err)}
			}
			if err := each(ev, data); err != nil {
				return err
			}
			data = nil
		case bytes.HasPrefix(line, []byte("data:")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
		// Comments (": keep-alive"), "event:" (the data's type says the same) and
		// "id:" lines need nothing.
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %v", errStreamEnded, err)
	}
	return errStreamEnded
}
