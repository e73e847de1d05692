package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// The exit codes of troupe, documented in doc.go.
const (
	exitOK          = 0   // done
	exitError       = 1   // the server answered an error, or the command failed
	exitUsage       = 2   // bad flags, arguments or options
	exitUnreachable = 3   // no answer from the management server
	exitRefused     = 4   // 401 or 403: the token is missing or wrong, or writes are disabled
	exitNotFound    = 5   // 404: no such member, or entity type
	exitInterrupted = 130 // interrupted (not for events, which end so)
)

// Defaults and environment variables of the global flags.
const (
	defaultURL     = "http://127.0.0.1:8558"
	defaultTimeout = 15 * time.Second
	envURL         = "TROUPE_MANAGEMENT_URL"
	envToken       = "TROUPE_MANAGEMENT_TOKEN"
)

// options are the global flags.
type options struct {
	url      string
	token    string
	json     bool
	timeout  time.Duration
	cacert   string
	cert     string
	key      string
	insecure bool
}

// register defines the global flags on fs, each defaulting to its current value, so
// that a command's flag set takes them after the command's name too.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "url", o.url, "the management server's URL (env "+envURL+")")
	fs.StringVar(&o.token, "token", o.token, "the bearer token of leave and down (env "+envToken+")")
	fs.BoolVar(&o.json, "json", o.json, "print the server's JSON as it came, for scripts")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for an answer (events: for the stream to open)")
	fs.StringVar(&o.cacert, "cacert", o.cacert, "PEM file of the certificate authorities to trust for https")
	fs.StringVar(&o.cert, "cert", o.cert, "PEM file of a client certificate, for mutual TLS (with -key)")
	fs.StringVar(&o.key, "key", o.key, "PEM file of the client certificate's private key")
	fs.BoolVar(&o.insecure, "insecure", o.insecure, "do not verify the server's certificate (tests only)")
}

// subFlags are the flags of the commands that have some.
type subFlags struct {
	detail bool   // shards: one row per shard
	local  bool   // shards: the asked node's shards only
	types  string // events: the event types to keep
	dir    string // remove-sharding-data: the badger journal's folder
	pg     string // remove-sharding-data: the PostgreSQL journal's connection string
	schema string // remove-sharding-data: its schema
	shards int    // remove-sharding-data: shards 0 to n-1 too
}

// session is one run of troupe: its flags, its output and the client of the server.
type session struct {
	opts   options
	sub    subFlags
	stdout io.Writer
	stderr io.Writer
	client *client
}

// command is one subcommand of troupe.
type command struct {
	name    string
	args    string // the positional arguments, for the usage
	summary string
	min     int // positional arguments, at least
	max     int // at most; -1 for any number
	// flags defines the command's own flags, when it has some.
	flags func(fs *flag.FlagSet, f *subFlags)
	// local is true for a command that does not call the management server.
	local bool
	// stream is true for a command that runs until interrupted: -timeout bounds only
	// its start.
	stream bool
	run    func(ctx context.Context, s *session, args []string) error
}

// commands are troupe's subcommands, in the order of the usage.
var commands = []command{
	{name: "members", summary: "list the members of the cluster", run: cmdMembers},
	{name: "member", args: "ADDR", summary: "show one member (ADDR: troupe://system@host:port, system@host:port or host:port)",
		min: 1, max: 1, run: cmdMember},
	{name: "leave", args: "ADDR", summary: "make a member leave gracefully (needs -token)", min: 1, max: 1, run: cmdLeave},
	{name: "down", args: "ADDR", summary: "down a member at once (needs -token)", min: 1, max: 1, run: cmdDown},
	{name: "shards", args: "[TYPE]", summary: "list the entity types; with TYPE, its shards and entities on every node",
		max: 1, run: cmdShards, flags: func(fs *flag.FlagSet, f *subFlags) {
			fs.BoolVar(&f.detail, "detail", false, "one row per shard")
			fs.BoolVar(&f.local, "local", false, "only the shards of the node asked")
		}},
	{name: "singletons", summary: "show where each singleton runs", run: cmdSingletons},
	{name: "events", summary: "follow the cluster's events until interrupted", stream: true, run: cmdEvents,
		flags: func(fs *flag.FlagSet, f *subFlags) {
			fs.StringVar(&f.types, "type", "", "keep only these event types, comma-separated (member-up,member-removed,...)")
		}},
	{name: "remove-sharding-data", args: "TYPE...", local: true, min: 1, max: -1, run: cmdRemoveShardingData,
		summary: "remove sharding's internal data of entity types from a stopped cluster's journal (badger or PostgreSQL)",
		flags: func(fs *flag.FlagSet, f *subFlags) {
			fs.StringVar(&f.dir, "dir", "", "the badger journal's folder (this or -postgres)")
			fs.StringVar(&f.pg, "postgres", "", "the PostgreSQL journal's connection string, as pgjournal.Config.ConnString (keep the password in PGPASSWORD)")
			fs.StringVar(&f.schema, "schema", "", "with -postgres: the journal's schema (default: the connection's search_path)")
			fs.IntVar(&f.shards, "shards", 0, "also remove the remembered entities of shards 0 to n-1")
		}},
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// notFoundError is a member the command line names that the cluster does not have:
// exit code 5, as a 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// run is troupe: it runs the command line args (without the program's name), writes
// to stdout and stderr, and returns the exit code. ctx ends an event stream (an
// interrupt, in main).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s := &session{stdout: stdout, stderr: stderr, opts: options{
		url: defaultURL, token: os.Getenv(envToken), timeout: defaultTimeout,
	}}
	if u := os.Getenv(envURL); u != "" {
		s.opts.url = u
	}
	fs := flag.NewFlagSet("troupe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs.Output()) }
	s.opts.register(fs)
	if err := fs.Parse(args); err != nil {
		return parseFailure(err)
	}
	if fs.NArg() == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		printUsage(stdout)
		return exitOK
	}
	cmd, ok := findCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "troupe: unknown command %q (run troupe help)\n", name)
		return exitUsage
	}
	pos, err := s.parseCommand(cmd, rest)
	if err != nil {
		return parseFailure(err)
	}
	if err := checkArgs(cmd, pos); err != nil {
		return s.exit(err)
	}
	if !cmd.local {
		c, err := s.newClient()
		if err != nil {
			return s.exit(err)
		}
		defer c.http.CloseIdleConnections()
		s.client = c
	}
	if !cmd.stream && !cmd.local {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
	}
	return s.exit(cmd.run(ctx, s, pos))
}

// parseFailure is the exit code of a flag set's error, which the flag package has
// printed: 0 for -h, 2 otherwise.
func parseFailure(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// parseCommand parses a command's flags, the global ones included, anywhere among its
// arguments (before "--"), and returns its positional arguments.
func (s *session) parseCommand(cmd command, args []string) ([]string, error) {
	fs := flag.NewFlagSet("troupe "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(s.stderr)
	s.opts.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs, &s.sub)
	}
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: troupe %s [flags] %s\n\n%s.\n\nflags:\n", cmd.name, cmd.args, cmd.summary)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		consumed := len(args) - fs.NArg()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, fs.Args()...), nil
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// checkArgs checks the number of a command's positional arguments.
func checkArgs(cmd command, pos []string) error {
	switch {
	case len(pos) < cmd.min:
		return &usageError{fmt.Sprintf("%s needs %s: troupe %s [flags] %s", cmd.name, cmd.args, cmd.name, cmd.args)}
	case cmd.max >= 0 && len(pos) > cmd.max:
		if cmd.max == 0 {
			return &usageError{fmt.Sprintf("%s takes no argument, got %q: troupe %s [flags]", cmd.name, pos, cmd.name)}
		}
		return &usageError{fmt.Sprintf("too many arguments for %s: %q: troupe %s [flags] %s", cmd.name, pos, cmd.name, cmd.args)}
	}
	return nil
}

// newClient returns the client of the server the flags name.
func (s *session) newClient() (*client, error) {
	raw := s.opts.url
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &usageError{fmt.Sprintf("-url %q is not an http:// or https:// URL", s.opts.url)}
	}
	if s.opts.timeout <= 0 {
		return nil, &usageError{"-timeout must be above 0"}
	}
	tlsCfg, err := s.opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil && u.Scheme != "https" {
		return nil, &usageError{"-cacert, -cert, -key and -insecure need an https:// -url"}
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   s.opts.timeout,
		ResponseHeaderTimeout: s.opts.timeout,
		MaxIdleConns:          2,
	}
	tr.DialContext = dialer(s.opts.timeout)
	return &client{
		base:  strings.TrimRight(u.String(), "/"),
		token: s.opts.token,
		http:  &http.Client{Transport: tr},
	}, nil
}

// exit prints err (if any) as one line on stderr and returns its exit code.
func (s *session) exit(err error) int {
	if err == nil {
		return exitOK
	}
	msg, code := describe(err, s.opts)
	fmt.Fprintln(s.stderr, "troupe: "+msg)
	return code
}

// describe returns the message and the exit code of a command's error.
func describe(err error, o options) (string, int) {
	var (
		usage       *usageError
		unreachable *unreachableError
		server      *serverError
		notFound    *notFoundError
	)
	switch {
	case errors.As(err, &usage):
		return usage.msg, exitUsage
	case errors.As(err, &unreachable):
		why := unreachable.Err.Error()
		if errors.Is(unreachable.Err, context.DeadlineExceeded) {
			why = fmt.Sprintf("no answer within -timeout %s", o.timeout)
		}
		return fmt.Sprintf("cannot reach the management server at %s: %s (is the node running, and -url or %s right?)",
			unreachable.URL, why, envURL), exitUnreachable
	case errors.As(err, &server):
		return describeServerError(server), serverExitCode(server.Status)
	case errors.As(err, &notFound):
		return notFound.msg, exitNotFound
	case errors.Is(err, context.Canceled):
		return "interrupted", exitInterrupted
	}
	return err.Error(), exitError
}

// describeServerError says what an error answer means for the operator.
func describeServerError(e *serverError) string {
	switch e.Status {
	case http.StatusUnauthorized:
		if !e.TokenSent {
			return "not authorized (401): this command needs the node's token: pass -token or set " + envToken
		}
		return "not authorized (401): the node refused the token: is -token (or " + envToken + ") the node's?"
	case http.StatusForbidden:
		return "refused (403): " + e.Message + ": the node has the routes that change the cluster disabled; ask a node that enables them"
	case http.StatusNotFound:
		return "not found (404): " + e.Message
	}
	return fmt.Sprintf("the server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// serverExitCode is the exit code of an error answer.
func serverExitCode(status int) int {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return exitRefused
	case http.StatusNotFound:
		return exitNotFound
	}
	return exitError
}

// printUsage prints troupe's usage: the commands, the flags and the exit codes.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: troupe [flags] COMMAND [flags] [ARGS]\n\nSee inside a running Troupe cluster through a node's management server.\n\ncommands:\n")
	tw := table(w)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(tw, "  help\tprint this\n")
	_ = tw.Flush()
	fs := flag.NewFlagSet("troupe", flag.ContinueOnError)
	fs.SetOutput(w)
	o := options{url: defaultURL, timeout: defaultTimeout}
	o.register(fs)
	fmt.Fprint(w, "\nflags (before or after the command):\n")
	fs.PrintDefaults()
	fmt.Fprint(w, `
exit codes: 0 done; 1 the server answered an error, or the command failed; 2 usage;
3 the management server cannot be reached; 4 not authorized (401) or refused (403);
5 not found (404); 130 interrupted.
`)
}
