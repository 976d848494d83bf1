#!/bin/sh
# The size metric: builds the program, strips it, and prints the stripped size in bytes (last line).
set -e
cd "$(dirname "$0")"
sh build.sh >&2
strip -o build/wordfreq.stripped build/wordfreq
stat -c %s build/wordfreq.stripped
