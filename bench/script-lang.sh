#!/bin/sh
# The embedded language's per-call cost (#19 item 5): Rhai against Lua 5.4 (mlua, vendored),
# one signing hook each. Builds its own small project (bench/script-lang) in release, in a
# target directory of its own (SCRIPT_LANG_TARGET, default /tmp/belier-script-lang-target).
set -eu
cd "$(dirname "$0")/script-lang"
CARGO_TARGET_DIR="${SCRIPT_LANG_TARGET:-/tmp/belier-script-lang-target}" cargo run --release --quiet
