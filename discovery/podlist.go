package discovery

// podList is the part of the API server's PodList that discovery reads.
type podList struct {
	Kind  string `json:"kind"`
	Items []pod  `json:"items"`
}

type pod struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Ports []struct {
				Name          string `json:"name"`
				ContainerPort int    `json:"containerPort"`
			} `json:"ports"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
		PodIP string `json:"podIP"`
	} `json:"status"`
}

// targets returns the addresses of the pods that are Running, not being deleted and
// have an IP: with portName, the container port of that name (pods without one are
// left out), else port. Sorted and without duplicates.
func (l podList) targets(portName string, port int) []Target {
	var ts []Target
	for _, p := range l.Items {
		if p.Status.Phase != "Running" || p.Metadata.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		t := Target{Host: p.Status.PodIP, Port: port}
		if portName != "" {
			var ok bool
			if t.Port, ok = p.namedPort(portName); !ok {
				continue
			}
		}
		ts = append(ts, t)
	}
	return normalize(ts)
}

// namedPort returns the first container port named name.
func (p pod) namedPort(name string) (int, bool) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name && cp.ContainerPort > 0 {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}
