package broker

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var updateConfigDoc = flag.Bool("update", false, "rewrite ../docs/CONFIG.md from Config")

// configDocPath is docs/CONFIG.md, relative to this package.
const configDocPath = "../docs/CONFIG.md"

// TestConfigDoc fails when docs/CONFIG.md is not what Config's kafka tags,
// doc comments and DefaultConfig say: the settings have one source, the
// code, and the document cannot go stale. Rewrite it with
//
//	go generate ./broker/   (or: go test ./broker/ -run ^TestConfigDoc$ -args -update)
func TestConfigDoc(t *testing.T) {
	got := configDoc(t)
	if *updateConfigDoc {
		if err := os.WriteFile(configDocPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatalf("%v: run go generate ./broker/", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./broker/ (go test ./broker/ -run ^TestConfigDoc$ -args -update)", configDocPath)
	}
}

// configDoc renders docs/CONFIG.md: one row per Config field, in field
// order, with its property name, default and doc comment.
func configDoc(t *testing.T) []byte {
	t.Helper()
	docs := configFieldDocs(t)
	defaults := map[string]string{}
	def := DefaultConfig()
	for _, p := range def.Properties() {
		defaults[p[0]] = p[1]
	}
	var b bytes.Buffer
	b.WriteString(`# kbroker settings

<!-- Generated from broker.Config by TestConfigDoc (go generate ./broker/); do not edit. -->

Every setting of the broker, by its Kafka property name (or a ` + "`kbroker.*`" + ` name
where Kafka has none). Set them in a properties file (` + "`kbroker --config file`" + `,
` + "`key=value`" + ` lines) or, for the most used ones, with the flags that
` + "`kbroker -h`" + ` lists; in Go, on ` + "`broker.Config`" + `. Durations are in
milliseconds, as Kafka's ` + "`*.ms`" + ` properties are. DescribeConfigs of the
broker reports the same names and values.

| property | default | Config field | description |
| --- | --- | --- | --- |
`)
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("kafka")
		if name == "" {
			t.Fatalf("Config.%s has no kafka tag", f.Name)
		}
		doc, ok := docs[f.Name]
		if !ok || doc == "" {
			t.Fatalf("Config.%s has no doc comment", f.Name)
		}
		def := defaults[name]
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", name, def, f.Name, strings.ReplaceAll(doc, "|", `\|`))
	}
	b.WriteString(`
## Kafka's other names, and Kafka settings kbroker ignores

A Kafka ` + "`server.properties`" + ` runs as it is. Kafka's coarser names set the settings
above (the most specific one set wins, wherever it appears in the file, as in Kafka):

`)
	for _, name := range slices.Sorted(maps.Keys(settingSynonyms)) {
		syn := settingSynonyms[name]
		if syn.scale == 1 {
			fmt.Fprintf(&b, "- `%s`: sets `%s`\n", name, syn.of)
		} else {
			fmt.Fprintf(&b, "- `%s`: sets `%s` (times %d)\n", name, syn.of, syn.scale)
		}
	}
	b.WriteString(`
These Kafka settings are accepted and ignored; the kbroker command logs the ones a file or
flag set when it starts:

`)
	for _, name := range slices.Sorted(maps.Keys(inapplicableSettings)) {
		fmt.Fprintf(&b, "- `%s`: %s\n", name, inapplicableSettings[name])
	}
	return b.Bytes()
}

// configFieldDocs reads the doc comments of Config's fields from
// config.go. A field without its own comment shares the comment above it
// (GroupMinSessionTimeout and GroupMaxSessionTimeout, the ConsumerGroup*
// settings), up to a blank line.
func configFieldDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			st, _ = ts.Type.(*ast.StructType)
			return false
		}
		return st == nil
	})
	if st == nil {
		t.Fatal("config.go: no Config struct")
	}
	out := map[string]string{}
	shared, sharedEnd := "", 0
	for _, field := range st.Fields.List {
		doc := ""
		if field.Doc != nil {
			doc = strings.Join(strings.Fields(field.Doc.Text()), " ")
		} else if line := fset.Position(field.Pos()).Line; line == sharedEnd+1 {
			doc = shared
		}
		if doc != "" {
			shared, sharedEnd = doc, fset.Position(field.End()).Line
		}
		for _, n := range field.Names {
			out[n.Name] = doc
		}
	}
	return out
}

// TestConfigDocCatchesStale makes sure the comparison can fail: a document
// missing one row is not what configDoc renders.
func TestConfigDocCatchesStale(t *testing.T) {
	doc := configDoc(t)
	i := bytes.Index(doc, []byte("| `listeners` |"))
	if i < 0 {
		t.Fatal("no listeners row")
	}
	j := i + bytes.IndexByte(doc[i:], '\n') + 1
	stale := append(append([]byte{}, doc[:i]...), doc[j:]...)
	if bytes.Equal(stale, doc) {
		t.Fatal("dropping a row changed nothing")
	}
	if n := bytes.Count(doc, []byte("\n| `")); n != reflect.TypeOf(Config{}).NumField() {
		t.Fatalf("%d rows for %d fields", n, reflect.TypeOf(Config{}).NumField())
	}
}
