package own

import "github.com/troupe-go/troupe/internal/secret"

var _ = secret.Value
