package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
)

// MessageView is the answer of a route that changed the cluster.
type MessageView struct {
	Message string `json:"message"`
}

// operationRequest is the JSON body of PUT /cluster/members/{address}.
type operationRequest struct {
	Operation string `json:"operation"`
}

// clusterOrError returns the cluster node of the system, or answers 503.
func (m *Management) clusterOrError(w http.ResponseWriter) *cluster.Cluster {
	c := cluster.Get(m.sys)
	if c == nil {
		writeError(w, http.StatusServiceUnavailable, "the cluster is not started on this node")
	}
	return c
}

// handleMembers answers GET /cluster/members.
func (m *Management) handleMembers(w http.ResponseWriter, _ *http.Request) {
	c := m.clusterOrError(w)
	if c == nil {
		return
	}
	writeJSON(w, http.StatusOK, membersView(c.SelfUniqueAddress(), c.State(), c.Observations()))
}

// memberOrError finds the member the route's {address} names, or answers 400 for a
// malformed address and 404 for an unknown member.
func (m *Management) memberOrError(w http.ResponseWriter, r *http.Request) (*cluster.Cluster, cluster.Member, bool) {
	c := m.clusterOrError(w)
	if c == nil {
		return nil, cluster.Member{}, false
	}
	raw := r.PathValue("address")
	addr, err := parseMemberAddress(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("malformed member address %q: %v (want troupe://system@host:port, URL-encoded, or system@host:port)", raw, err))
		return nil, cluster.Member{}, false
	}
	mem, ok := findMember(c.State(), addr)
	if !ok {
		writeError(w, http.StatusNotFound, "no member at "+addr.String())
		return nil, cluster.Member{}, false
	}
	return c, mem, true
}

// handleMember answers GET /cluster/members/{address}.
func (m *Management) handleMember(w http.ResponseWriter, r *http.Request) {
	c, mem, ok := m.memberOrError(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, memberView(mem, ageOrders(c.State().Members)[mem.Unique]))
}

// handleMemberOperation answers PUT /cluster/members/{address} with operation Leave or
// Down, in a form or a JSON body.
func (m *Management) handleMemberOperation(w http.ResponseWriter, r *http.Request) {
	op, status, err := readOperation(r)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	c, mem, ok := m.memberOrError(w, r)
	if !ok {
		return
	}
	switch {
	case strings.EqualFold(op, "leave"):
		m.leave(w, r, c, mem)
	case strings.EqualFold(op, "down"):
		if err := c.Down(mem.Unique); err != nil {
			writeError(w, http.StatusServiceUnavailable, "cannot down the member: "+err.Error())
			return
		}
		m.log.Warn("management: member downed by an operator request")
		writeJSON(w, http.StatusOK, MessageView{Message: "Downing " + mem.Unique.Addr})
	}
}

// handleMemberLeave answers DELETE /cluster/members/{address}: the member leaves.
func (m *Management) handleMemberLeave(w http.ResponseWriter, r *http.Request) {
	c, mem, ok := m.memberOrError(w, r)
	if !ok {
		return
	}
	m.leave(w, r, c, mem)
}

// readOperation reads the operation of a PUT: the form field operation, or the JSON
// body's. It answers the HTTP status of a failure: 413 for a body over the limit, 400
// for anything else (including an operation other than Leave or Down).
func readOperation(r *http.Request) (string, int, error) {
	var op string
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var req operationRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return "", bodyStatus(err), fmt.Errorf("malformed JSON body: %w", err)
		}
		op = req.Operation
	} else {
		if err := r.ParseForm(); err != nil {
			return "", bodyStatus(err), fmt.Errorf("malformed form: %w", err)
		}
		op = r.Form.Get("operation")
	}
	if !strings.EqualFold(op, "leave") && !strings.EqualFold(op, "down") {
		return "", http.StatusBadRequest, fmt.Errorf("unknown operation %q: use Leave or Down", op)
	}
	return op, 0, nil
}

// bodyStatus is 413 for a body over the limit and 400 for another error.
func bodyStatus(err error) int {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// leave makes the member mem leave the cluster gracefully. This member leaves by
// running its system's coordinated shutdown (shards and singletons are handed over
// first, then it leaves, then its system terminates, as Akka's default); another
// member is asked to do the same through its management actor, which needs its
// management server started.
func (m *Management) leave(w http.ResponseWriter, r *http.Request, c *cluster.Cluster, mem cluster.Member) {
	if mem.Unique == c.SelfUniqueAddress() {
		m.log.Warn("management: this member leaves the cluster on an operator request: running coordinated shutdown")
		go func() { _ = m.sys.Shutdown(context.Background()) }()
		writeJSON(w, http.StatusOK, MessageView{Message: "Leaving " + mem.Unique.Addr})
		return
	}
	target, err := m.sys.Resolve(mem.Unique.Addr + "/system/" + actorName)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "cannot address the member: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.QueryTimeout)
	defer cancel()
	ack, err := actor.Ask[leaveAck](ctx, target, leaveRequest{UID: mem.Unique.UID})
	if err != nil {
		writeError(w, http.StatusGatewayTimeout, fmt.Sprintf(
			"the member did not confirm the leave request (its management server must be started): %v", err))
		return
	}
	if ack.Error != "" {
		writeError(w, http.StatusConflict, "the member refused to leave: "+ack.Error)
		return
	}
	writeJSON(w, http.StatusOK, MessageView{Message: "Leaving " + mem.Unique.Addr})
}
