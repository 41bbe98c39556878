// Command payoutd is a Harvest node that runs the payout workflow: every
// command, flag and HARVEST_* variable of harvestd (payoutd dev, payoutd
// agent …), over its own registry. main.go is all it takes.
package main
