package workflowcheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/harvestd/harvest/workflowcheck"
)

func TestPatterns(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/patterns")
}
