package server

import (
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/node"
)

// Names of the flags of dev only.
const (
	flagPostgres = "postgres"
	flagPGBinDir = "pg-bin-dir"
)

func devFlags() []cli.Flag {
	return append(append(nodeFlags(), authFlags(node.AuthOff)...),
		&cli.StringFlag{Name: flagPostgres, EnvVars: []string{"HARVEST_POSTGRES"},
			Usage: "DSN of an existing PostgreSQL database to use instead of the managed server"},
		&cli.StringFlag{Name: flagPGBinDir, EnvVars: []string{"HARVEST_PG_BIN_DIR"},
			Usage: "directory holding initdb and postgres for the managed server (default: PATH, then /usr/lib/postgresql/*/bin)"},
	)
}

// runDev is the dev command: one node serving one shard.
func (a *app) runDev(c *cli.Context) error {
	cfg, err := nodeConfig(c)
	if err != nil {
		return err
	}
	cfg.PostgresDSN = c.String(flagPostgres)
	cfg.PGBinDir = c.String(flagPGBinDir)
	if err := authConfig(c, &cfg); err != nil {
		return err
	}
	if err := requireLoopbackWithoutAuth(cfg); err != nil {
		return err
	}
	return a.serve(c, cfg)
}
