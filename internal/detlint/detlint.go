// Package detlint finds code that would break kafkasim's determinism
// contract: goroutines, the wall clock, sleeping, and global or
// cryptographic randomness in packages that must take all of those from the
// world (env, sim, broker). The real-mode runtime (package host) is exempt:
// it is where those things are supposed to live.
package detlint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Finding is one forbidden construct.
type Finding struct {
	Pos  token.Position
	What string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.What) }

// forbiddenTime are the time functions that read or wait on the wall clock.
var forbiddenTime = map[string]bool{
	"Now": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true,
	"NewTimer": true, "NewTicker": true, "Since": true, "Until": true,
}

// forbiddenImports are packages whose use means randomness from outside the
// world.
var forbiddenImports = map[string]bool{
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true,
}

// Scan parses every non-test Go file under the given directories and
// returns what it forbids, sorted by position.
func Scan(dirs ...string) ([]Finding, error) {
	var out []Finding
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			out = append(out, scanFile(fset, f)...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	return out, nil
}

func scanFile(fset *token.FileSet, f *ast.File) []Finding {
	var out []Finding
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if forbiddenImports[path] {
			out = append(out, Finding{fset.Position(imp.Pos()), "imports " + path + " (use env.Rand from the world)"})
		}
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, Finding{fset.Position(n.Pos()), "go statement (a process has one event loop; schedule an event instead)"})
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && forbiddenTime[n.Sel.Name] {
				out = append(out, Finding{fset.Position(n.Pos()), "time." + n.Sel.Name + " (use env.Now / env.AfterFunc)"})
			}
		}
		return true
	})
	return out
}
