#!/bin/sh
# Builds build/wordfreq from src/*.cc with the flags listed in compile_flags.txt.
set -e
cd "$(dirname "$0")"
rm -rf build
mkdir -p build
# shellcheck disable=SC2046  # the flags are words
g++ -std=c++17 $(cat compile_flags.txt) src/*.cc -o build/wordfreq
