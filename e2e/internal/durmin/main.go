// Command durmin prints a Go duration (e.g. 1h30m) in whole minutes,
// rounded up; scripts/chaos.sh uses it to size the test timeout.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: durmin DURATION")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil || d < 0 {
		fmt.Fprintf(os.Stderr, "durmin: %q is not a duration like 30m or 2h\n", os.Args[1])
		os.Exit(2)
	}
	fmt.Println(int((d + time.Minute - 1) / time.Minute))
}
