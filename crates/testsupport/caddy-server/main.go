// Caddy, built from the Go module proxy with its standard modules, for belier's HTTP/3 tests:
// the same program as the released caddy binary (`caddy run --config FILE --adapter
// caddyfile`), pinned by this module's go.sum.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
