#!/usr/bin/env bash
# Runs the venv's python with the remaining arguments, or skips (CTest's SKIP_RETURN_CODE 77) with a
# line saying why when the environment was never made: `make setup` (or `make venv`) makes it.
venv="$1"
shift
if [ ! -x "$venv/bin/python" ]; then
  echo "SKIPPED: no torch 2.x environment at $venv (make venv creates it)"
  exit 77
fi
exec "$venv/bin/python" "$@"
