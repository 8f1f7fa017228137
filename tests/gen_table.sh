#!/usr/bin/env bash
# Generates the test runner's name table from every ZT_TEST(name) in the given files.
set -euo pipefail
names=$(grep -ho '^ZT_TEST([a-z0-9_]*)' "$@" | sed 's/ZT_TEST(\(.*\))/\1/' | sort)
for n in $names; do echo "int zt_test_$n(void);"; done
echo "static const zt_test_entry zt_test_table[] = {"
for n in $names; do echo "    {\"$n\", zt_test_$n},"; done
echo "};"
