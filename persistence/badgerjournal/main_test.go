package badgerjournal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-go/troupe/persistence"
)

// Environment variables that turn the test binary into a helper process.
const (
	envHoldDir  = "BADGERJOURNAL_TEST_HOLD_DIR"  // open the store and wait for stdin to close
	envWriteDir = "BADGERJOURNAL_TEST_WRITE_DIR" // write events until killed, reporting each ack
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envHoldDir); dir != "" {
		os.Exit(holdLock(dir))
	}
	if dir := os.Getenv(envWriteDir); dir != "" {
		os.Exit(writeUntilKilled(dir))
	}
	goleak.VerifyTestMain(m)
}

// holdLock opens a store in dir, says "ready" and keeps it open until its
// stdin closes.
func holdLock(dir string) int {
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := s.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// writeUntilKilled writes events of "crash" one by one with the default
// durability, printing each sequence number once its write is
// acknowledged, until the process is killed.
func writeUntilKilled(dir string) int {
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	ctx := context.Background()
	highest, err := s.HighestSequenceNr(ctx, "crash")
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	for seq := highest + 1; ; seq++ {
		w := persistence.AtomicWrite{PersistenceID: "crash", Events: []persistence.Record{{
			PersistenceID: "crash", SequenceNr: seq, Payload: []byte(strconv.FormatUint(seq, 10)),
		}}}
		results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w})
		if err == nil {
			err = results[0]
		}
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Fprintln(out, seq)
		out.Flush()
	}
}
