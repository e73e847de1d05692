package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of the directory's YAML files, by kind.
type manifests struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	roles           []*rbacv1.Role
	roleBindings    []*rbacv1.RoleBinding
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// readManifests decodes every document of every YAML file here strictly (an unknown
// field is an error) into the type of its kind, and fails on a kind it does not know.
func readManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*.yml")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no YAML files")
	}
	var m manifests
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documentSeparator.Split(string(data), -1) {
			if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				d := new(appsv1.Deployment)
				m.deployments, obj = append(m.deployments, d), d
			case "v1 Service":
				s := new(corev1.Service)
				m.services, obj = append(m.services, s), s
			case "v1 ServiceAccount":
				s := new(corev1.ServiceAccount)
				m.serviceAccounts, obj = append(m.serviceAccounts, s), s
			case "rbac.authorization.k8s.io/v1 Role":
				r := new(rbacv1.Role)
				m.roles, obj = append(m.roles, r), r
			case "rbac.authorization.k8s.io/v1 RoleBinding":
				r := new(rbacv1.RoleBinding)
				m.roleBindings, obj = append(m.roleBindings, r), r
			default:
				t.Fatalf("%s, document %d: unknown kind %q of %q", f, i+1, tm.Kind, tm.APIVersion)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s, document %d (%s): %v", f, i+1, tm.Kind, err)
			}
		}
	}
	for kind, n := range map[string]int{
		"Deployment": len(m.deployments), "Service": len(m.services), "ServiceAccount": len(m.serviceAccounts),
		"Role": len(m.roles), "RoleBinding": len(m.roleBindings),
	} {
		if n != 1 {
			t.Fatalf("%d %s objects, want 1", n, kind)
		}
	}
	return m
}

var comment = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(b []byte) []byte { return comment.ReplaceAll(b, nil) }

// TestManifests checks that the objects fit together and fit main.go.
func TestManifests(t *testing.T) {
	m := readManifests(t)
	dep, svc, sa, role, rb := m.deployments[0], m.services[0], m.serviceAccounts[0], m.roles[0], m.roleBindings[0]
	tmpl := dep.Spec.Template
	podLabels := labels.Set(tmpl.Labels)

	// The Deployment's selector selects its own pods.
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector %v (%v) does not select its template's labels %v", dep.Spec.Selector, err, podLabels)
	}
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(tmpl.Spec.Containers))
	}
	c := tmpl.Spec.Containers[0]
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		if _, dup := ports[p.Name]; dup || p.Name == "" {
			t.Errorf("container port %q: unnamed or named twice", p.Name)
		}
		ports[p.Name] = p
	}

	// The headless Service selects the pods, lists them before they are ready, and
	// its ports name container ports.
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service: clusterIP %q, publishNotReadyAddresses %v; want None and true", svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("the Service's selector %v does not select the pods (%v)", svc.Spec.Selector, podLabels)
	}
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s: target port %q is not a container port's name", p.Name, p.TargetPort.String())
		}
	}

	// The probes ask the management port for /ready and /alive.
	for name, probe := range map[string]*corev1.Probe{"/ready": c.ReadinessProbe, "/alive": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", name)
			continue
		}
		if probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "management" {
			t.Errorf("probe %s asks %s on port %q; want %s on the management port", name, probe.HTTPGet.Path, probe.HTTPGet.Port.String(), name)
		}
		if _, ok := ports[probe.HTTPGet.Port.String()]; !ok {
			t.Errorf("probe %s: port %q is not a container port's name", name, probe.HTTPGet.Port.String())
		}
	}

	// The pods run as the ServiceAccount, which the RoleBinding gives the Role, which
	// may read pods.
	if tmpl.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the pods run as %q, not the ServiceAccount %q", tmpl.Spec.ServiceAccountName, sa.Name)
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("the RoleBinding refers to %+v, not the Role %q", rb.RoleRef, role.Name)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != sa.Name ||
		(rb.Subjects[0].Namespace != "" && rb.Subjects[0].Namespace != sa.Namespace) {
		t.Errorf("the RoleBinding's subjects %+v are not the ServiceAccount %q", rb.Subjects, sa.Name)
	}
	if !grants(role, "pods", "get", "list", "watch") {
		t.Errorf("the Role %+v does not grant get, list and watch on pods", role.Rules)
	}

	// The grace period covers the shutdown.
	bound := phasesWithTasks * phaseTimeout
	if g := tmpl.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < bound {
		t.Errorf("terminationGracePeriodSeconds %s; want at least the shutdown's bound, %v", deref(g), bound)
	}

	// The environment is what main.go reads, and agrees with the ports, the replicas
	// and the labels.
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.Name == "POD_IP":
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
				t.Errorf("POD_IP does not come from status.podIP")
			}
			env[e.Name] = "10.0.0.1"
		case e.ValueFrom != nil:
			t.Errorf("env %s: only POD_IP comes from the downward API", e.Name)
		default:
			env[e.Name] = e.Value
		}
	}
	cfg, err := settingsFrom(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("settings from the Deployment's environment: %v", err)
	}
	for name, want := range map[string]int{"remote": cfg.remotePort, "gossip": cfg.gossipPort,
		"management": cfg.managementPort, "http": cfg.httpPort} {
		if p, ok := ports[name]; !ok || int(p.ContainerPort) != want {
			t.Errorf("container port %s: %+v; the node listens on %d", name, p, want)
		}
	}
	if dep.Spec.Replicas == nil || int(*dep.Spec.Replicas) != cfg.requiredPoints {
		t.Errorf("replicas %s, REQUIRED_CONTACT_POINTS %d: they must agree", deref(dep.Spec.Replicas), cfg.requiredPoints)
	}
	// main.go looks up the pods with app=<SERVICE_NAME>.
	if tmpl.Labels["app"] != cfg.service {
		t.Errorf("the pods' app label %q is not SERVICE_NAME %q", tmpl.Labels["app"], cfg.service)
	}
}

// deref formats an optional number.
func deref[T int32 | int64](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// grants reports whether a rule of role grants every verb on resource in the core
// API group.
func grants(role *rbacv1.Role, resource string, verbs ...string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, resource) {
			all := true
			for _, v := range verbs {
				all = all && (slices.Contains(r.Verbs, v) || slices.Contains(r.Verbs, "*"))
			}
			if all {
				return true
			}
		}
	}
	return false
}

func TestSettings(t *testing.T) {
	env := map[string]string{"POD_IP": "10.1.2.3"}
	get := func(k string) string { return env[k] }
	s, err := settingsFrom(get)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{podIP: "10.1.2.3", service: "troupe-demo", requiredPoints: 3, remotePort: 25520,
		gossipPort: 7946, managementPort: 8558, httpPort: 8080}
	if s != want {
		t.Fatalf("defaults %+v, want %+v", s, want)
	}
	for k, v := range map[string]string{"POD_IP": "", "GOSSIP_PORT": "70000", "REQUIRED_CONTACT_POINTS": "0", "HTTP_PORT": "x"} {
		bad := map[string]string{"POD_IP": "10.1.2.3"}
		bad[k] = v
		if _, err := settingsFrom(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%s=%q: no error", k, v)
		}
	}
}
