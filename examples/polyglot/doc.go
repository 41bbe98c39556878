// Command loand is a Harvest node whose workflow calls a service written
// in Python (scoring_server.py, standard library only) as HTTP
// activities: one synchronous, deduplicated by the activity's stable
// Idempotency-Key, and one asynchronous, which the Python service
// completes later with the attempt's task token. loand has every command,
// flag and HARVEST_* variable of harvestd; SCORING_URL is the base URL of
// the scoring service (default http://127.0.0.1:8090).
package main
