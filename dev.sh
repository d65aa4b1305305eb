#!/usr/bin/env bash
# Set up everything a fresh machine lacks, then build+serve or test.
#
#   bash dev.sh serve [--port N]   build dist/ and serve it on http://127.0.0.1:N/ (default 8000)
#   bash dev.sh test [pytest args] run the whole test suite (unit + real-browser tests)
#   bash dev.sh bench              run the benchmarks under bench/ (prints figures)
#
# Set-up (idempotent, quick when already done): a virtualenv in .venv with the
# project and its test extra; for tests and benchmarks, a Chromium (see
# setup_chromium); for tests, Firefox ESR and WebKitGTK (setup_engines); for
# benchmarks, Lighthouse 13 and the Node 22 that runs it, from npm (npm ci into
# bench/lighthouse/node_modules). The pinned browser runtime is
# fetched and verified by build.py into .cache/runtime on first build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV=.venv
PY="$VENV/bin/python"

# The first 16 hex digits of a file's sha256 (macOS has shasum, not sha256sum).
hash16() {
  if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -c1-16
}

# `limit SECONDS command...`: the command with a time limit where timeout(1) exists (not on macOS).
limit() {
  if command -v timeout >/dev/null; then timeout "$@"; else shift; "$@"; fi
}

setup_python() {
  if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
  fi
  # install only when pyproject.toml changed since the last install
  local stamp="$VENV/.installed-$(hash16 pyproject.toml)"
  if [ ! -f "$stamp" ]; then
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e '.[test]'
    rm -f "$VENV"/.installed-*
    touch "$stamp"
  fi
}

# `apt_install PACKAGE...`: Debian's packages, the package lists updated once per run.
APT_UPDATED=""
apt_install() {
  if [ -z "$APT_UPDATED" ]; then
    limit 600 apt-get update -qq || { echo "apt-get update failed (or took over 600 s)" >&2; exit 1; }
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive limit 900 apt-get install -y -qq "$@" >/dev/null ||
    { echo "apt-get could not install $* (or took over its time limit)" >&2; exit 1; }
}

DEBIAN_CHROMIUM=/usr/bin/chromium

# The browser for tests and benchmarks, in this order: $AE_CHROMIUM if set; Debian's
# Chromium (installed with apt-get when missing); where there is no apt-get (macOS,
# Fedora), Playwright's own Chromium, whose path is then exported as AE_CHROMIUM
# (tests/conftest.py's choose_chromium reads it; it makes the same choice by itself).
setup_chromium() {
  if [ -n "${AE_CHROMIUM:-}" ] || [ -x "$DEBIAN_CHROMIUM" ]; then return; fi
  if command -v apt-get >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "Chromium is missing: run 'sudo apt-get update && sudo apt-get install -y chromium'" >&2
      exit 1
    fi
    apt_install chromium
    return
  fi
  echo "dev.sh: no $DEBIAN_CHROMIUM and no apt-get here: using Playwright's own Chromium (python -m playwright install chromium)" >&2
  limit 900 "$PY" -m playwright install chromium ||
    { echo "python -m playwright install chromium failed or took over 900 s (it downloads from Playwright's servers)" >&2; exit 1; }
  AE_CHROMIUM="$("$PY" -c 'from playwright.sync_api import sync_playwright
with sync_playwright() as pw: print(pw.chromium.executable_path)')"
  export AE_CHROMIUM
}

# The other engines the suite drives (tests/test_browser_engines.py), from Debian: Firefox ESR, WebKitGTK's
# WebDriver (with its MiniBrowser) and Xvfb, the virtual screen MiniBrowser needs; installed with apt-get
# when missing. Then puppeteer-core, which speaks WebDriver BiDi to Firefox, pinned with every package's
# sha512 in tests/engines/package-lock.json (npm ci; only when missing or the lock changed).
ENGINE_PACKAGES="firefox-esr webkit2gtk-driver xvfb"
ENGINE_FILES="/usr/bin/firefox-esr /usr/bin/WebKitWebDriver /usr/bin/Xvfb"
setup_engines() {
  local f missing=""
  for f in $ENGINE_FILES; do [ -x "$f" ] || missing=1; done
  if [ -n "$missing" ]; then
    if ! command -v apt-get >/dev/null || [ "$(id -u)" -ne 0 ]; then
      echo "Firefox ESR, WebKitGTK's WebDriver or Xvfb is missing: run 'sudo apt-get update && sudo apt-get install -y $ENGINE_PACKAGES'" >&2
      echo "(without apt-get, run the rest of the suite with: bash dev.sh test --deselect tests/test_browser_engines.py)" >&2
      exit 1
    fi
    # shellcheck disable=SC2086  # one word per package
    apt_install $ENGINE_PACKAGES
  fi
  npm_ci_once tests/engines "puppeteer-core, which drives Firefox"
}

# `npm_ci_once DIR WHAT`: npm ci into DIR/node_modules from DIR/package-lock.json (every package's
# sha512 pinned there), only when missing or the lock changed; WHAT says what it installs.
npm_ci_once() {
  local dir="$1"
  local stamp="$dir/node_modules/.installed-$(hash16 "$dir/package-lock.json")"
  if [ -f "$stamp" ]; then return; fi
  if ! command -v npm >/dev/null; then
    echo "npm is missing: it installs $2 (apt-get install -y nodejs npm)" >&2
    exit 1
  fi
  limit 600 npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
    { echo "npm ci --prefix $dir failed or took over 600 s (is the npm registry reachable?)" >&2; exit 1; }
  touch "$stamp"
}

setup_lighthouse() {
  # Lighthouse for bench/bench_lighthouse.py, pinned in bench/lighthouse/package-lock.json
  npm_ci_once bench/lighthouse "Lighthouse 13 and the Node 22 that runs it"
}

main() {
  local cmd="${1:-}"
  shift || true
  case "$cmd" in
    serve)
      setup_python
      exec "$PY" build.py serve "$@"
      ;;
    test)
      setup_python
      setup_chromium
      setup_engines
      "$PY" build.py  # fetch + verify the runtime first, so a fetch failure reads as one
      # two workers (pytest-xdist), a file or a group of files sharing one page load to each
      # (tests/conftest.py); arguments given here come after, so `-n 0` runs in one process
      exec "$PY" -m pytest -n 2 --dist loadfile "$@"
      ;;
    bench)
      setup_python
      setup_chromium
      setup_engines
      setup_lighthouse
      "$PY" build.py
      local failed="" b
      for b in bench/bench_*.py; do "$PY" "$b" || failed="$failed $b"; done
      if [ -n "$failed" ]; then echo "benchmarks that could not run:$failed" >&2; exit 1; fi
      ;;
    *)
      echo "usage: bash dev.sh serve [--port N] | test [pytest args] | bench" >&2
      exit 2
      ;;
  esac
}

# run, unless sourced (tests/test_browser_choice.py sources it to call setup_chromium)
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
