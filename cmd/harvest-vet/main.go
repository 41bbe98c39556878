// Command harvest-vet reports non-deterministic code in Harvest workflow
// functions: the checks of package workflowcheck. It runs on its own or
// as a vet tool:
//
//	harvest-vet ./...
//	go vet -vettool=$(which harvest-vet) ./...
//
// From a module that requires github.com/harvestd/harvest, without
// installing it:
//
//	go run github.com/harvestd/harvest/cmd/harvest-vet ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/harvestd/harvest/workflowcheck"
)

func main() { singlechecker.Main(workflowcheck.Analyzer) }
