package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/serialization"
)

// runNode runs one node with the PostgreSQL journal and answers the commands read from
// standard input, one line each. Its first line is
// "ready <name> gossip <host:port> address <its remote address>".
// SIGTERM, Ctrl-C or "quit" makes it leave gracefully.
func runNode(f flags) error {
	if f.postgres == "" {
		return errors.New("-node needs -postgres: the journal every node shares")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: f.postgres})
	cancel()
	if err != nil {
		return err
	}
	defer store.Close()
	reg := serialization.NewRegistry()
	if err := registerCounter(reg); err != nil {
		return err
	}
	var seeds []string
	if f.seed != "" {
		seeds = []string{f.seed}
	}
	n, err := startNode(f.name, seeds, nodeConfig{
		reg: reg, journal: store, snapshots: store, idle: f.idle, shards: f.shards, logger: logger(f.verbose),
		remotePort: f.remotePort, gossipPort: f.gossipPort,
	})
	if err != nil {
		return err
	}
	fmt.Printf("ready %s gossip %s address %s\n", f.name, n.cluster.GossipAddress(), n.cluster.SelfUniqueAddress().Addr)

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	n.sys.ShutdownOnSignal() // SIGTERM or Ctrl-C: hand the shards off and leave
	for {
		select {
		case <-n.sys.Terminated():
			return n.leave() // the outcome of the shutdown the signal ran
		case line, ok := <-lines:
			if !ok || line == "quit" {
				err := n.leave()
				fmt.Println("left")
				return err
			}
			fmt.Println(n.command(line))
		}
	}
}

// command runs one command line and returns its answer line.
func (n *node) command(line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "error: empty command"
	}
	if fields[0] == "shards" {
		s, err := n.shards()
		if err != nil {
			return "error: " + err.Error()
		}
		return "shards " + s
	}
	if len(fields) != 2 {
		return "error: want inc|dec|get ID, shards, or quit"
	}
	var cmd any
	switch fields[0] {
	case "inc":
		cmd = Increment{}
	case "dec":
		cmd = Decrement{}
	case "get":
		cmd = Get{}
	default:
		return "error: unknown command " + fields[0]
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := n.send(fields[1], cmd)
		if err == nil {
			return fmt.Sprintf("count %s %d %s", c.ID, c.Value, c.Node)
		}
		if _, ok := cmd.(Get); !ok || time.Now().After(deadline) {
			return "error: " + err.Error()
		}
	}
}

// child is a node process driven through its standard input and output.
type child struct {
	name string
	addr cluster.UniqueAddress // its remote address (the uid left zero)
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
}

func (c *child) ask(line string) (string, error) {
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		return "", err
	}
	if !c.out.Scan() {
		return "", fmt.Errorf("%s exited", c.name)
	}
	return c.out.Text(), nil
}

// runProcesses is the demo with each node in a process of its own.
func runProcesses(f flags) error {
	if f.postgres == "" {
		return errors.New("-processes needs -postgres: the journal every node shares")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var children []*child
	defer func() {
		for _, c := range children {
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}
	}()
	seed := ""
	for i := range 3 {
		args := []string{"-node", "-postgres", f.postgres, "-name", fmt.Sprintf("counter-%d", i),
			"-shards", fmt.Sprint(f.shards), "-idle", f.idle.String()}
		if seed != "" {
			args = append(args, "-seed", seed)
		}
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		c := &child{name: fmt.Sprintf("counter-%d", i), cmd: cmd, in: in, out: bufio.NewScanner(out)}
		children = append(children, c)
		if !c.out.Scan() {
			return fmt.Errorf("%s did not start", c.name)
		}
		fields := strings.Fields(c.out.Text())
		fmt.Println(c.out.Text())
		if len(fields) != 6 {
			return fmt.Errorf("%s: unexpected first line %q", c.name, c.out.Text())
		}
		if seed == "" {
			seed = fields[3]
		}
		c.addr = cluster.UniqueAddress{Addr: fields[5]}
	}
	time.Sleep(3 * time.Second) // let the members become Up
	want := map[string]string{}
	for j := 1; j <= f.counters; j++ {
		id := fmt.Sprint(j)
		for k, cmd := range []string{"inc", "inc", "inc", "dec"} {
			line, err := children[(j+k)%3].ask(cmd + " " + id)
			if err != nil {
				return err
			}
			want[id] = strings.Fields(line)[2]
		}
	}
	check := func(c *child) error {
		for j := 1; j <= f.counters; j++ {
			id := fmt.Sprint(j)
			line, err := c.ask("get " + id)
			if err != nil {
				return err
			}
			fmt.Println(" ", line)
			if fields := strings.Fields(line); len(fields) < 3 || fields[2] != want[id] {
				return fmt.Errorf("counter %s: %q, want %s", id, line, want[id])
			}
		}
		return nil
	}
	fmt.Println("counts after the increments:")
	if err := check(children[0]); err != nil {
		return err
	}
	fmt.Println("counter-2 leaves gracefully")
	if _, err := children[2].ask("quit"); err != nil {
		return err
	}
	_ = children[2].cmd.Wait()
	if err := check(children[0]); err != nil {
		return err
	}
	// Of two members, keep-majority keeps the one with the lowest address when the other
	// becomes unreachable: the demo kills the other one.
	victim, survivor := children[1], children[0]
	if victim.addr.Compare(survivor.addr) < 0 {
		victim, survivor = survivor, victim
	}
	fmt.Println(victim.name, "is killed")
	_ = victim.cmd.Process.Kill()
	_ = victim.cmd.Wait()
	if err := check(survivor); err != nil {
		return err
	}
	_, err = survivor.ask("quit")
	return err
}
