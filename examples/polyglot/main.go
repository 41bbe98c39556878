package main

import (
	"os"

	"github.com/harvestd/harvest/examples/polyglot/loan"
	"github.com/harvestd/harvest/server"
)

// scoringURLDefault is where scoring_server.py listens by default.
const scoringURLDefault = "http://127.0.0.1:8090"

func main() {
	url := os.Getenv("SCORING_URL")
	if url == "" {
		url = scoringURLDefault
	}
	reg, err := loan.New(url).Registry()
	if err != nil {
		panic(err)
	}
	server.Main(reg, server.WithName("loand"), server.WithUsage("loan applications scored and reviewed by a Python service, on Harvest"))
}
