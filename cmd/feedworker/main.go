// Command feedworker turns RSS, Atom and JSON feeds into content on the
// Audience and Content Service. Run "feedworker help" for the subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `feedworker turns RSS, Atom and JSON feeds into Stories, Links, Events and Needs.

Usage:
  feedworker run        --config F        poll and publish until signalled (SIGHUP reloads the config)
  feedworker once       --config F        one pass over every feed, then exit (non-zero if a feed failed)
  feedworker validate   --config F        check a config file, print every problem with file:line
  feedworker preview    --config F [--feed ID] | --url URL
                                          fetch and print what would be published, as JSON
  feedworker content list --config F [--type T] [--external-id X]
                                          list content on the API (or the embedded sandbox)
  feedworker deadletters list  --config F
  feedworker deadletters retry --config F (ID... | --all)
  feedworker backfill   --config F --feed ID --since YYYY-MM-DD
                                          publish older items that were recorded as seen only
  feedworker release    --config F --feed ID (--all | --since YYYY-MM-DD | --drop)
                                          post (or record as seen) the items a feed's flood guard holds
  feedworker feeds import FILE.opml [--config F [--write]] [--type T] [--category-from-outline]
                                          feed entries from an OPML list: printed, or merged into F
  feedworker feeds export --config F      print the configured feeds as OPML 2.0
  feedworker explain    --config F (--feed ID | --item TEXT) [--json]
                                          what happened to an item (or a feed's last polls and items)
  feedworker sandbox    [--addr 127.0.0.1:8089] [--data FILE]
                                          serve the local sandbox of the API
  feedworker bench      [--feeds 1000 --items 20 --change 0.1 --runs 1 --json ...]
                                          measure the worker on a local feed farm, sandbox and Redis
  feedworker healthcheck [--url http://127.0.0.1:9090/readyz]
                                          exit 0 when the worker answers ready (for containers)
  feedworker version

Run "feedworker COMMAND -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit code other than 1 through the commands.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = cmdRun(ctx, rest, stdout, stderr)
	case "once":
		err = cmdOnce(ctx, rest, stdout, stderr)
	case "validate":
		err = cmdValidate(ctx, rest, stdout, stderr)
	case "preview":
		err = cmdPreview(ctx, rest, stdout, stderr)
	case "content":
		err = cmdContent(ctx, rest, stdout, stderr)
	case "deadletters":
		err = cmdDeadLetters(ctx, rest, stdout, stderr)
	case "backfill":
		err = cmdBackfill(ctx, rest, stdout, stderr)
	case "release":
		err = cmdRelease(ctx, rest, stdout, stderr)
	case "explain":
		err = cmdExplain(ctx, rest, stdout, stderr)
	case "sandbox":
		err = cmdSandbox(ctx, rest, stdout, stderr)
	case "healthcheck":
		err = cmdHealthcheck(ctx, rest, stdout, stderr)
	case "bench":
		err = cmdBench(ctx, rest, stdout, stderr)
	case "feeds":
		err = cmdFeeds(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "feedworker", buildVersion())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "feedworker: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "feedworker %s: %v\n", cmd, err)
	return 1
}

// newFlags returns a flag set that prints its errors to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("feedworker "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
