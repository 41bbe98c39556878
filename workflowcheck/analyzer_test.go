package workflowcheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/harvestd/harvest/workflowcheck"
)

func TestPatterns(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/patterns")
}

func TestHelpers(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/helpers")
}

func TestEscapeHatch(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/escape")
}

func TestCrossPackage(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/cross/...")
}

func TestOutsideWorkflows(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), workflowcheck.Analyzer, "./flows/outside")
}
