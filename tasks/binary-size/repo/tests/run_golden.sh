#!/bin/sh
# Golden-output tests: builds the program, then for each tests/golden/NAME.in runs
# `build/wordfreq ARGS < NAME.in` (ARGS: the words of NAME.args, if there is one) and compares its
# output, standard error and exit status (a last line "exit N") with NAME.out, byte for byte.
cd "$(dirname "$0")/.." || exit 2
sh build.sh || exit 1
failed=0
total=0
for input in tests/golden/*.in; do
  name=${input%.in}
  args=""
  if [ -f "$name.args" ]; then args=$(cat "$name.args"); fi
  total=$((total + 1))
  # shellcheck disable=SC2086  # the arguments are words
  { build/wordfreq $args <"$input"; echo "exit $?"; } >build/actual.txt 2>&1
  if ! cmp -s build/actual.txt "$name.out"; then
    echo "FAIL $(basename "$name"): output differs (expected < > actual)"
    diff "$name.out" build/actual.txt | head -n 12
    failed=$((failed + 1))
  fi
done
echo "$((total - failed)) of $total golden tests passed"
[ "$failed" -eq 0 ]
