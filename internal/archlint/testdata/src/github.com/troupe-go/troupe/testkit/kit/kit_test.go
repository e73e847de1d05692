package kit

import (
	"testing"

	"github.com/troupe-go/troupe/internal/secret"
)

func TestKit(t *testing.T) { _ = secret.Value }
