package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// settings is the node's configuration, read from the environment the Deployment sets
// (deployment.yaml).
type settings struct {
	podIP          string // POD_IP, from the downward API (status.podIP); required
	service        string // SERVICE_NAME: the value of the pods' app label; default troupe-demo
	requiredPoints int    // REQUIRED_CONTACT_POINTS: the replicas the Deployment starts with; default 3
	remotePort     int    // REMOTE_PORT, default 25520
	gossipPort     int    // GOSSIP_PORT, default 7946
	managementPort int    // MANAGEMENT_PORT, default 8558
	httpPort       int    // HTTP_PORT, default 8080: the counters' HTTP API
}

// settingsFrom reads the settings through getenv (os.Getenv in main).
func settingsFrom(getenv func(string) string) (settings, error) {
	s := settings{podIP: getenv("POD_IP"), service: getenv("SERVICE_NAME")}
	var errs []error
	if ip := net.ParseIP(s.podIP); ip == nil {
		errs = append(errs, fmt.Errorf("POD_IP %q is not an IP address (set it from the downward API: status.podIP)", s.podIP))
	}
	if s.service == "" {
		s.service = "troupe-demo"
	}
	number := func(name string, def, least, most int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < least || n > most {
			errs = append(errs, fmt.Errorf("%s %q: want a number from %d to %d", name, v, least, most))
		}
		return n
	}
	s.requiredPoints = number("REQUIRED_CONTACT_POINTS", 3, 1, 1000)
	s.remotePort = number("REMOTE_PORT", 25520, 1, 65535)
	s.gossipPort = number("GOSSIP_PORT", 7946, 1, 65535)
	s.managementPort = number("MANAGEMENT_PORT", 8558, 1, 65535)
	s.httpPort = number("HTTP_PORT", 8080, 1, 65535)
	return s, errors.Join(errs...)
}
