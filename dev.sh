#!/usr/bin/env bash
# Set up everything a fresh machine lacks, then build+serve or test.
#
#   bash dev.sh serve [--port N]   build dist/ and serve it on http://127.0.0.1:N/ (default 8000)
#   bash dev.sh test [pytest args] run the whole test suite (unit + real-browser tests)
#   bash dev.sh bench              run the benchmarks under bench/ (prints figures)
#
# Set-up (idempotent, quick when already done): a virtualenv in .venv with the
# project and its test extra; for tests and benchmarks, Debian's Chromium
# (apt-get, when /usr/bin/chromium is missing); for benchmarks, Lighthouse from npm
# (npm ci into bench/lighthouse/node_modules). The pinned browser runtime is
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

setup_lighthouse() {
  # Lighthouse for bench/bench_lighthouse.py, pinned (with every package's sha512) in
  # bench/lighthouse/package-lock.json; installed only when missing or the lock changed
  local dir=bench/lighthouse
  local stamp="$dir/node_modules/.installed-$(sha256sum "$dir/package-lock.json" | cut -c1-16)"
  if [ -f "$stamp" ]; then return; fi
  if ! command -v npm >/dev/null; then
    echo "npm is missing: Lighthouse 12 needs Node.js >= 18.16 and npm (apt-get install -y nodejs npm)" >&2
    exit 1
  fi
  timeout 600 npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
    { echo "npm ci --prefix $dir failed or took over 600 s (is the npm registry reachable?)" >&2; exit 1; }
  touch "$stamp"
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
    setup_lighthouse
    "$PY" build.py
    failed=""
    for b in bench/bench_*.py; do "$PY" "$b" || failed="$failed $b"; done
    if [ -n "$failed" ]; then echo "benchmarks that could not run:$failed" >&2; exit 1; fi
    ;;
  *)
    echo "usage: bash dev.sh serve [--port N] | test [pytest args] | bench" >&2
    exit 2
    ;;
esac
