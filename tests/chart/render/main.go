// Command render renders a Helm chart the way `helm template` does, with Go's text/template and the sprig
// function library (the engine and functions Helm itself uses), so chart tests exercise real Go templates.
//
// Usage:
//
//	render --chart DIR [-f values.yaml ...] [--name RELEASE] [--namespace NS] [--notes]
//
// What it implements of Helm 3:
//   - .Values: the chart's values.yaml, then each -f file deep-merged over it in order; a null in a -f file
//     removes the chart default (Helm's coalescing); a "global" map is always present. The result is
//     validated against values.schema.json (JSON Schema, gojsonschema as in Helm) when the chart has one.
//   - .Release (Name, Namespace, Service "Helm", IsInstall, IsUpgrade, Revision), .Chart (Name, Version,
//     AppVersion, Description, Type, KubeVersion, APIVersion), .Template (Name, BasePath).
//   - functions: sprig without env/expandenv, plus Helm's include, tpl, required, toYaml, fromYaml and toJson
//     (sprig's); templates are executed with missingkey=zero and "<no value>" is removed from the output.
//   - every templates/*.yaml|*.yml|*.tpl|*.txt is parsed; files whose name starts with "_" and NOTES.txt are
//     not rendered as manifests. Each rendered file is split into YAML documents; empty ones are dropped;
//     every document must parse as YAML; documents are ordered by kind in Helm's install order, then by
//     template name, and printed as "---\n# Source: <chart>/templates/<file>\n<doc>\n".
//   - --notes prints the rendered templates/NOTES.txt instead of the manifests.
//
// Errors (bad values, schema violations, template errors, fail/required) go to stderr with exit status 1.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

// installOrder is the order in which Helm installs kinds (unknown kinds go last); only the position matters.
var installOrder = []string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget", "ServiceAccount",
	"Secret", "ConfigMap", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleBinding", "Role", "RoleBinding", "Service", "DaemonSet", "Pod", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

const recursionMaxNums = 1000

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type chartMeta struct {
	APIVersion  string `json:"apiVersion"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion"`
	Description string `json:"description"`
	Type        string `json:"type"`
	KubeVersion string `json:"kubeVersion"`
}

type document struct {
	source string
	order  int
	index  int
	body   string
}

func main() {
	var valueFiles multiFlag
	chartDir := flag.String("chart", "", "chart directory (required)")
	name := flag.String("name", "release-name", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt instead of the manifests")
	flag.Var(&valueFiles, "f", "values file merged over the chart's values.yaml (repeatable)")
	flag.Var(&valueFiles, "values", "same as -f")
	flag.Parse()
	if *chartDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: render --chart DIR [-f values.yaml ...] [--name N] [--namespace NS] [--notes]")
		os.Exit(2)
	}
	out, err := run(*chartDir, valueFiles, *name, *namespace, *notes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

func run(chartDir string, valueFiles []string, name, namespace string, notes bool) (string, error) {
	meta, err := loadChart(chartDir)
	if err != nil {
		return "", err
	}
	values, err := loadValues(chartDir, valueFiles)
	if err != nil {
		return "", err
	}
	if err := validateSchema(chartDir, meta.Name, values); err != nil {
		return "", err
	}
	tmpl, files, err := parseTemplates(chartDir, meta.Name)
	if err != nil {
		return "", err
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": name, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false,
			"Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": meta.Name, "Version": meta.Version, "AppVersion": meta.AppVersion,
			"Description": meta.Description, "Type": meta.Type, "KubeVersion": meta.KubeVersion,
			"APIVersion": meta.APIVersion,
		},
	}
	basePath := meta.Name + "/templates"
	if notes {
		notesName := basePath + "/NOTES.txt"
		if tmpl.Lookup(notesName) == nil {
			return "", nil
		}
		return execute(tmpl, notesName, basePath, top)
	}
	var docs []document
	for _, file := range files {
		base := filepath.Base(file)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		text, err := execute(tmpl, file, basePath, top)
		if err != nil {
			return "", err
		}
		for i, body := range splitDocuments(text) {
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(body), &head); err != nil {
				return "", fmt.Errorf("YAML parse error on %s (document %d): %v\n%s", file, i+1, err, body)
			}
			docs = append(docs, document{source: file, order: kindOrder(head.Kind), index: i, body: body})
		}
	}
	sort.SliceStable(docs, func(a, b int) bool {
		if docs[a].order != docs[b].order {
			return docs[a].order < docs[b].order
		}
		return docs[a].source < docs[b].source
	})
	var buf strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&buf, "---\n# Source: %s\n%s\n", d.source, d.body)
	}
	return buf.String(), nil
}

func loadChart(dir string) (chartMeta, error) {
	var meta chartMeta
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return meta, err
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return meta, fmt.Errorf("Chart.yaml: %v", err)
	}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return meta, errors.New("Chart.yaml: apiVersion must be v2, and name and version must be set")
	}
	return meta, nil
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	return m, nil
}

// loadValues merges the -f files in order (later wins), then coalesces the result over the chart defaults.
func loadValues(chartDir string, files []string) (map[string]interface{}, error) {
	defaults, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	user := map[string]interface{}{}
	for _, f := range files {
		m, err := readYAMLMap(f)
		if err != nil {
			return nil, err
		}
		mergeInto(user, m)
	}
	values := coalesce(user, defaults)
	// Helm always gives a chart a "global" map (shared with subcharts), so the schema sees one too.
	if _, ok := values["global"].(map[string]interface{}); !ok {
		values["global"] = map[string]interface{}{}
	}
	return values, nil
}

// mergeInto deep-merges src into dst: maps merge key by key, anything else (nulls included) replaces.
func mergeInto(dst, src map[string]interface{}) {
	for k, v := range src {
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			mergeInto(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// coalesce returns user's values over the defaults; a null in user removes the key.
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range user {
		if v == nil {
			delete(out, k)
			continue
		}
		um, uok := v.(map[string]interface{})
		dm, dok := out[k].(map[string]interface{})
		if uok && dok {
			out[k] = coalesce(um, dm)
		} else {
			out[k] = v
		}
	}
	return out
}

func validateSchema(chartDir, chartName string, values map[string]interface{}) error {
	schema, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	doc, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	valuesJSON, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json: %v", err)
	}
	if result.Valid() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n", chartName)
	for _, e := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

func parseTemplates(chartDir, chartName string) (*template.Template, []string, error) {
	paths, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(paths)
	tmpl := template.New("gotpl").Option("missingkey=zero")
	tmpl.Funcs(funcMap(tmpl))
	var names []string
	for _, p := range paths {
		ext := filepath.Ext(p)
		if ext != ".yaml" && ext != ".yml" && ext != ".tpl" && ext != ".txt" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		name := chartName + "/templates/" + filepath.Base(p)
		if _, err := tmpl.New(name).Parse(string(data)); err != nil {
			return nil, nil, fmt.Errorf("parse error in %s: %v", name, err)
		}
		names = append(names, name)
	}
	return tmpl, names, nil
}

// funcMap is sprig's (minus the environment readers Helm removes) plus Helm's own template functions.
func funcMap(root *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	includes := map[string]int{}
	f["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		if includes[name] > recursionMaxNums {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includes[name]++
		defer func() { includes[name]-- }()
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %v", text, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

var (
	execLocationRe = regexp.MustCompile(`^template: (\S+?): executing `)
	execCallRe     = regexp.MustCompile(`error calling (fail|required): `)
)

func execute(tmpl *template.Template, name, basePath string, top map[string]interface{}) (string, error) {
	data := map[string]interface{}{}
	for k, v := range top {
		data[k] = v
	}
	data["Template"] = map[string]interface{}{"Name": name, "BasePath": basePath}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		msg := err.Error()
		// Helm's form for fail/required, however deep in includes: "execution error at (<file>:<line>:<col>):
		// <message>", the location being the rendered file's.
		loc := execLocationRe.FindStringSubmatch(msg)
		calls := execCallRe.FindAllStringIndex(msg, -1)
		if loc != nil && calls != nil {
			msg = fmt.Sprintf("execution error at (%s): %s", loc[1], msg[calls[len(calls)-1][1]:])
		}
		return "", errors.New(msg)
	}
	return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments splits rendered text on "---" lines and drops documents that are only blank or comments.
func splitDocuments(text string) []string {
	var docs []string
	for _, part := range docSeparator.Split(text, -1) {
		meaningful := false
		for _, line := range strings.Split(part, "\n") {
			trimmed := strings.TrimSpace(line)
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				meaningful = true
				break
			}
		}
		if meaningful {
			docs = append(docs, strings.Trim(part, "\n"))
		}
	}
	return docs
}

func kindOrder(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}
