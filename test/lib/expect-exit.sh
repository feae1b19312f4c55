#!/usr/bin/env bash
# Usage: expect-exit.sh CODE COMMAND [ARGS...]
# Runs COMMAND with stderr merged into stdout (so a pipe to FileCheck sees the
# diagnostics) and succeeds only if it exited with exactly CODE. A crash (signal)
# exits with 128+N and so fails.
want=$1
shift
"$@" 2>&1
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-exit: '$1' exited with status $got, expected $want"
  exit 1
fi
exit 0
