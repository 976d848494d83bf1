#!/usr/bin/env bash
# Runs each fuzzer of a fuzz build (cmake --preset fuzz) for a bounded time from its committed
# corpus (tests/fuzz/corpus/<name>/: seeds and every input a fuzzer ever failed on, so each past
# finding is replayed first). New corpus entries go to a temp folder, never into the repository.
# Prints one line per fuzzer and exits non-zero when any fuzzer fails; a failing input is copied to
# <build>/fuzz-artifacts/ to be kept as a regression input (docs/reliability.md, "Fuzzing").
#
#   tests/fuzz/run-fuzzers.sh [BUILD_DIR]      (default build-fuzz)
#   FUZZ_SECONDS=10  fuzzing time per fuzzer   FUZZ_RSS_MB=2048  memory limit per fuzzer
#   FUZZERS="task_spec eval_result"            only these
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build-fuzz}" && pwd) || exit 2
seconds=${FUZZ_SECONDS:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
artifacts=$build/fuzz-artifacts
work=$(mktemp -d "${TMPDIR:-/tmp}/marathon-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

names=${FUZZERS:-$(cd "$build/tests/fuzz" && ls fuzz_* 2>/dev/null | sed 's/^fuzz_//')}
if [ -z "$names" ]; then
  echo "run-fuzzers: no fuzzers in $build/tests/fuzz (build them: cmake --build --preset fuzz)" >&2
  exit 2
fi

failed=0
for name in $names; do
  bin=$build/tests/fuzz/fuzz_$name
  corpus=$root/tests/fuzz/corpus/$name
  dict=()
  case $name in
    task_spec) dict=(-dict="$root/tests/fuzz/toml.dict") ;;
    eventlog_file) ;;
    *) dict=(-dict="$root/tests/fuzz/json.dict") ;;
  esac
  mkdir -p "$work/$name/new"
  log=$work/$name/log
  # Committed inputs over 64 KiB (the 400 KB deep-nesting seeds) are run whole first, each once;
  # fuzzing then mutates inputs up to the largest committed input below that (at least 4096 bytes,
  # libFuzzer's own floor), so the large seeds do not slow every execution.
  mapfile -t big < <(find "$corpus" -type f -size +64k | sort)
  max_len=$(find "$corpus" -type f -size -65537c -printf '%s\n' | sort -n | tail -1)
  max_len=$(( ${max_len:-0} > 4096 ? max_len : 4096 ))
  rc=0
  if [ "${#big[@]}" -gt 0 ]; then
    "$bin" -rss_limit_mb="$rss_mb" -timeout=20 -artifact_prefix="$work/$name/" "${big[@]}" \
      >"$log" 2>&1
    rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    "$bin" -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=20 -print_final_stats=1 \
      -max_len="$max_len" -artifact_prefix="$work/$name/" "${dict[@]}" "$work/$name/new" \
      "$corpus" >>"$log" 2>&1
    rc=$?
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  seeds=$(find "$corpus" -type f | wc -l)
  new=$(find "$work/$name/new" -type f | wc -l)
  found=$(find "$work/$name" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o \
    -name 'timeout-*' -o -name 'oom-*' \) | head -1)
  if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
    rate=$(( ${runs:-0} / (${secs:-0} > 0 ? ${secs} : 1) ))
    echo "fuzz $name: ok, ${runs:-0} runs in ${secs:-?} s (${rate}/s), cov ${cov:-?}," \
      "$seeds committed inputs replayed, $new new (not kept)"
  else
    failed=1
    echo "fuzz $name: FAILED (exit $rc)"
    grep -E 'ERROR|FUZZ EXPECTATION|what\(\)|runtime error|SUMMARY|terminate' "$log" | head -8 |
      sed 's/^/  /'
    if [ -n "$found" ]; then
      mkdir -p "$artifacts"
      cp "$found" "$artifacts/${name}-${found##*/}"
      echo "  input: $artifacts/${name}-${found##*/}"
      echo "  replay: $bin $artifacts/${name}-${found##*/}"
      echo "  keep it: fix the bug, then commit it as tests/fuzz/corpus/$name/regression-<what>"
    else
      tail -20 "$log" | sed 's/^/  /'
    fi
  fi
done
exit "$failed"
