package main

import (
	"github.com/harvestd/harvest/examples/payments/payout"
	"github.com/harvestd/harvest/server"
)

func main() {
	reg, err := payout.New(payout.NewBank()).Registry()
	if err != nil {
		panic(err)
	}
	server.Main(reg, server.WithName("payoutd"), server.WithUsage("payouts with approval, on Harvest"))
}
