package core

import (
	"testing"
	"time"
)

func TestStep(t *testing.T) {
	go func() {}()
	_ = time.Now()
}
