package singleton

// RegisterCluster records a test node's cluster for Start and Proxy.
var RegisterCluster = registerCluster
