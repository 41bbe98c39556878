// Package deploytest checks the deployment files at the repository root:
// scripts/local-cluster.sh runs a three-node cluster on 127.0.0.1 (the
// no-Docker path of the README's "Try a cluster"), and
// docker-compose.cluster.yml is checked against harvestd's real flags, since
// Docker does not run in CI. It has no code of its own, only tests.
package deploytest
