#!/usr/bin/env bash
# Set up everything a fresh machine lacks, then build+serve or test.
#
#   bash dev.sh serve [--port N]   build dist/ and serve it on http://127.0.0.1:N/ (default 8000)
#   bash dev.sh test [pytest args] run the whole test suite (unit + real-browser tests)
#   bash dev.sh bench              run the benchmarks under bench/ (prints figures)
#
# Set-up (idempotent, quick when already done): a virtualenv in .venv with the
# project and its test extra; for tests and benchmarks, Debian's Chromium
# (apt-get, when /usr/bin/chromium is missing). The pinned browser runtime is
# fetched and verified by build.py into .cache/runtime on first build.
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PY="$VENV/bin/python"

setup_python() {
  if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
  fi
  # install only when pyproject.toml changed since the last install
  local stamp="$VENV/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e '.[test]'
    rm -f "$VENV"/.installed-*
    touch "$stamp"
  fi
}

setup_chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "Chromium is missing: run 'sudo apt-get update && sudo apt-get install -y chromium'" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}

cmd="${1:-}"
shift || true
case "$cmd" in
  serve)
    setup_python
    exec "$PY" build.py serve "$@"
    ;;
  test)
    setup_python
    setup_chromium
    "$PY" build.py  # fetch + verify the runtime first, so a fetch failure reads as one
    exec "$PY" -m pytest "$@"
    ;;
  bench)
    setup_python
    setup_chromium
    "$PY" build.py
    for b in bench/bench_*.py; do "$PY" "$b"; done
    ;;
  *)
    echo "usage: bash dev.sh serve [--port N] | test [pytest args] | bench" >&2
    exit 2
    ;;
esac
