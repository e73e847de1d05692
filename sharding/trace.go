package sharding

import "os"

var traceOn = os.Getenv("SHARDING_TRACE") != ""
