package kit

import "github.com/troupe-go/troupe/internal/secret" // want `imports github.com/troupe-go/troupe/internal/secret`

var _ = secret.Value
