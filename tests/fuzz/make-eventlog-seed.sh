#!/usr/bin/env bash
# Makes a seed for fuzz_eventlog_file from a real run's events.db: checkpoints added at the given
# seqs (none: none), the WAL folded into the file, and the file rewritten with 512-byte pages so the
# seed stays small. The run's own file is not touched.
#   tests/fuzz/make-eventlog-seed.sh RUN/events.db OUT.db [SEQ...]
# e.g. after `marathon run tasks/cpu-matmul --run-dir R --policy search --max-tool-calls 3`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$1 out=$2
shift 2
cmake --build "$root/build-fuzz" --target eventlog_seed >/dev/null
sqlite3 "$src" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$src" "$out"
rm -f "$out-wal" "$out-shm"
if [ $# -gt 0 ]; then
  ASAN_OPTIONS=detect_leaks=0 "$root/build-fuzz/tests/fuzz/eventlog_seed" "$out" "$@"
fi
sqlite3 "$out" "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM; PRAGMA journal_mode=WAL;" \
  >/dev/null
echo "$out: $(stat -c %s "$out") bytes"
