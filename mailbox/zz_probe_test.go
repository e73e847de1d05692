package mailbox

import (
	"runtime"
	"testing"
)

type env struct {
	msg    any
	sender *int
}

func BenchmarkProbeQueueEnvSPSC(b *testing.B) {
	var q Queue[env]
	x := new(int)
	var m any = x
	b.ReportAllocs()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range b.N {
			q.Push(env{m, x})
		}
	}()
	for n := 0; n < b.N; {
		if _, ok := q.Pop(); !ok {
			runtime.Gosched()
			continue
		}
		n++
	}
	<-done
}

func BenchmarkProbeChanEnvSPSC(b *testing.B) {
	ch := make(chan env, 1024)
	x := new(int)
	var m any = x
	b.ReportAllocs()
	go func() {
		for range b.N {
			ch <- env{m, x}
		}
		close(ch)
	}()
	for range ch {
	}
}
