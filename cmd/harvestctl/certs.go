package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/internal/tlsconf/certgen"
)

func certsCommand() *cli.Command {
	return &cli.Command{
		Name:  "certs",
		Usage: "make TLS certificates for a local or compose cluster (production brings its own CA)",
		Subcommands: []*cli.Command{{
			Name: "create",
			Usage: "write a CA and one node certificate (naming localhost, 127.0.0.1 and every HOST) into DIR, " +
				"every file mode 0600; never overwrites",
			ArgsUsage: "<dir> [host-or-ip ...]",
			Action:    certsCreateAction,
		}},
	}
}

func certsCreateAction(c *cli.Context) error {
	if c.NArg() < 1 {
		return usagef("certs create: want a directory (and the nodes' host names or IPs)")
	}
	dir := c.Args().First()
	if err := certgen.Create(dir, c.Args().Tail(), time.Now()); err != nil {
		return usagef("certs create: %v", err)
	}
	_, err := fmt.Fprintf(c.App.Writer, "wrote %s, %s and %s (keep %s to sign more)\n",
		filepath.Join(dir, certgen.CAFile), filepath.Join(dir, certgen.NodeFile),
		filepath.Join(dir, certgen.NodeKeyFile), certgen.CAKeyFile)
	return err
}
