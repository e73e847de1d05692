package demo

import (
	"testing"

	"github.com/troupe-go/troupe/internal/secret" // want `imports github.com/troupe-go/troupe/internal/secret`
)

func TestDemo(t *testing.T) { _ = secret.Value }
