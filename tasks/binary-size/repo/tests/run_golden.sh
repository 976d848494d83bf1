#!/bin/sh
# Golden-output tests: builds the program, then for each tests/golden/NAME.in runs
# `build/wordfreq ARGS < NAME.in` (ARGS: the words of NAME.args, if there is one) and compares its
# output, standard error and exit status (a last line "exit N") with NAME.out, byte for byte.
# Under the evaluator the golden files are read from the committed snapshot (MARATHON_REPO_DIR,
# read-only), never from the tree the program runs in: a program that rewrites tests/golden/ or
# build/ while it runs changes nothing; its output is held in this shell, not in a file.
cd "$(dirname "$0")/.." || exit 2
golden="${MARATHON_REPO_DIR:-.}/tests/golden"
sh build.sh || exit 1
failed=0
total=0
for input in "$golden"/*.in; do
  name=${input%.in}
  args=""
  if [ -f "$name.args" ]; then args=$(cat "$name.args"); fi
  total=$((total + 1))
  # shellcheck disable=SC2086  # the arguments are words
  actual=$({ build/wordfreq $args <"$input"; echo "exit $?"; } 2>&1)
  if ! printf '%s\n' "$actual" | cmp -s - "$name.out"; then
    echo "FAIL $(basename "$name"): output differs (expected < > actual)"
    printf '%s\n' "$actual" | diff "$name.out" - | head -n 12
    failed=$((failed + 1))
  fi
done
echo "$((total - failed)) of $total golden tests passed"
[ "$failed" -eq 0 ]
