package serve_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/celguard/celguard/serve"
)

// openapiURL is where the tests load the document as a schema resource.
const openapiURL = "https://celguard.dev/openapi.json"

// spec is the OpenAPI document, decoded, with its schemas compiled.
var spec = struct {
	once    sync.Once
	err     error
	doc     map[string]any
	c       *jsonschema.Compiler
	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by JSON pointer
	used    map[string]bool               // "METHOD /path/template" exercised
}{schemas: map[string]*jsonschema.Schema{}, used: map[string]bool{}}

func loadSpec() error {
	spec.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(serve.OpenAPI))
		if err != nil {
			spec.err = fmt.Errorf("openapi.json is not JSON: %w", err)
			return
		}
		spec.doc = doc.(map[string]any)
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource(openapiURL, doc); err != nil {
			spec.err = err
			return
		}
		// The Decision schema is the one of docs/, by its $id.
		data, err := os.ReadFile(filepath.Join("..", "docs", "schema", "decision.schema.json"))
		if err != nil {
			spec.err = err
			return
		}
		dec, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			spec.err = err
			return
		}
		if err := c.AddResource(dec.(map[string]any)["$id"].(string), dec); err != nil {
			spec.err = err
			return
		}
		spec.c = c
	})
	return spec.err
}

// schemaAt compiles the schema at a JSON pointer of the document.
func schemaAt(ptr string) (*jsonschema.Schema, error) {
	spec.mu.Lock()
	defer spec.mu.Unlock()
	if s, ok := spec.schemas[ptr]; ok {
		return s, nil
	}
	s, err := spec.c.Compile(openapiURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	spec.schemas[ptr] = s
	return s, nil
}

// escape escapes a JSON pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// route finds the path template of the document that path (without its
// query) matches.
func route(path string) (string, bool) {
	paths := spec.doc["paths"].(map[string]any)
	for tmpl := range paths {
		re := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			return tmpl, true
		}
	}
	return "", false
}

// validateExchange checks one request the tests sent and its answer
// against the document: the status is documented for the operation, an
// accepted request's body matches the request schema, and the answer's
// body matches the response schema. Requests to routes the document does
// not have (tests of 404) are not checked.
func validateExchange(t *testing.T, method, rawPath string, reqBody any, status int, respBody []byte) {
	t.Helper()
	if err := loadSpec(); err != nil {
		t.Fatal(err)
	}
	path, _, _ := strings.Cut(rawPath, "?")
	tmpl, ok := route(path)
	if !ok {
		return
	}
	op, ok := spec.doc["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		return
	}
	spec.mu.Lock()
	spec.used[method+" "+tmpl] = true
	spec.mu.Unlock()
	base := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method)
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if !ok {
		t.Errorf("%s %s answered %d, which the OpenAPI document does not list", method, tmpl, status)
		return
	}
	if status < 300 && reqBody != nil {
		var raw []byte
		if s, isStr := reqBody.(string); isStr {
			raw = []byte(s)
		} else {
			raw, _ = json.Marshal(reqBody)
		}
		// A body that is not JSON at all is a test of malformed input.
		if json.Valid(raw) {
			checkBody(t, base+"/requestBody/content/application~1json/schema", raw, method+" "+tmpl+" request")
		}
	}
	if content, ok := resp["content"].(map[string]any); ok {
		if _, isJSON := content["application/json"]; isJSON {
			checkBody(t, base+"/responses/"+strconv.Itoa(status)+"/content/application~1json/schema", respBody, fmt.Sprintf("%s %s answer %d", method, tmpl, status))
		}
	} else if len(bytes.TrimSpace(respBody)) > 0 {
		t.Errorf("%s %s answer %d has a body the document does not describe: %s", method, tmpl, status, respBody)
	}
}

func checkBody(t *testing.T, ptr string, body []byte, what string) {
	t.Helper()
	sch, err := schemaAt(ptr)
	if err != nil {
		t.Fatalf("%s: schema %s: %v", what, ptr, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s is not JSON: %v\n%s", what, err, body)
		return
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s does not match the OpenAPI document: %v\n%s", what, err, body)
	}
}

// TestOpenAPIDocument checks the document's structure (OpenAPI 3.1: every
// operation has a unique operationId and responses, every path parameter
// is declared, every $ref resolves, every schema compiles as JSON Schema
// 2020-12) and that its routes are the server's: each one answers
// something other than the mux's 404 or 405.
func TestOpenAPIDocument(t *testing.T) {
	if err := loadSpec(); err != nil {
		t.Fatal(err)
	}
	doc := spec.doc
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Error("info needs a title and a version")
	}
	ids := map[string]bool{}
	paths := doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		params := regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(tmpl, -1)
		for method, o := range item.(map[string]any) {
			op := o.(map[string]any)
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, tmpl, id)
			}
			ids[id] = true
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				t.Errorf("%s %s has no responses", method, tmpl)
			}
			for code, r := range responses {
				if r.(map[string]any)["description"] == nil {
					t.Errorf("%s %s %s: a response needs a description", method, tmpl, code)
				}
			}
			declared := map[string]bool{}
			ps, _ := op["parameters"].([]any)
			for _, p := range ps {
				pm := p.(map[string]any)
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
			for _, p := range params {
				if !declared[p[1]] {
					t.Errorf("%s %s: path parameter %s is not declared", method, tmpl, p[1])
				}
			}
		}
	}
	// Every schema of the document compiles (and with it every $ref).
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["schema"].(map[string]any); ok {
				if _, err := schemaAt(ptr + "/schema"); err != nil {
					t.Errorf("schema at %s: %v", ptr, err)
				}
			}
			for k, e := range x {
				walk(ptr+"/"+escape(k), e)
			}
		case []any:
			for i, e := range x {
				walk(ptr+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("/paths", doc["paths"])
	for name := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
		if _, err := schemaAt("/components/schemas/" + name); err != nil {
			t.Errorf("components.schemas.%s: %v", name, err)
		}
	}
}

// TestMain runs the tests and then, when all of them ran, checks that
// every operation of the OpenAPI document was exercised by one.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && loadSpec() == nil {
		var missing []string
		for tmpl, item := range spec.doc["paths"].(map[string]any) {
			for method := range item.(map[string]any) {
				if !spec.used[strings.ToUpper(method)+" "+tmpl] {
					missing = append(missing, strings.ToUpper(method)+" "+tmpl)
				}
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			fmt.Fprintf(os.Stderr, "FAIL: the tests exercise no request to these operations of openapi.json: %s\n", strings.Join(missing, ", "))
			code = 1
		}
	}
	os.Exit(code)
}
