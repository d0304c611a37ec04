#!/usr/bin/env bash
# The test command: `bash tests/run.sh [pytest args...]`.
#
# Does all set-up itself, so it works on a fresh machine:
#   1. creates .venv (python3 -m venv) if missing, installs requirements.txt + tests/requirements.txt into it;
#   2. makes a Chromium available for the browser tests: a `chromium`/`chromium-browser` on PATH is used as is;
#      otherwise, as root with apt-get, Debian's `chromium` package is installed; otherwise Playwright downloads
#      its own build (`python -m playwright install chromium`);
#   3. runs pytest and exits with its status. With no arguments (everything, CI's command) in two parts: every test
#      but the real-browser ones on two pytest-xdist workers (unit tests and short CPU runs: 6 min 14 s serial, 4 min
#      20 s on two, on 2 cores), then the real-browser tests one at a time (each drives a server that trains runs,
#      and Chromium: side by side they would slow each other's waits). Both parts always run; it fails if either
#      does. With arguments: one pytest with them (the quick tier takes `-n 2` as well).
#
# On a machine without a GPU, install the CPU build of torch into .venv first, or pip fetches ~3 GB of CUDA wheels:
#   python3 -m venv .venv && .venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
set -euo pipefail

cd "$(dirname "$0")/.."
REPO="$PWD"
PY="$REPO/.venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$PY" ]; then
    echo "tests/run.sh: creating .venv" >&2
    python3 -m venv .venv
fi
"$PY" -m pip install -q -r requirements.txt -r tests/requirements.txt

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    :  # tests/browser/conftest.py finds it on PATH
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: installing chromium with apt-get" >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
        echo "tests/run.sh: apt-get could not install chromium; using Playwright's own build" >&2
        "$PY" -m playwright install --with-deps chromium
    fi
else
    echo "tests/run.sh: no chromium on PATH; fetching Playwright's own build (cached after the first time)" >&2
    "$PY" -m playwright install chromium
fi

# Tiny Shakespeare needs no set-up: the tests use the copy embedded in the package (tinygpt/corpora/). A
# TINYGPT_SHAKESPEARE already in the environment is an override and is passed through as is.

if [ "$#" -gt 0 ]; then
    exec "$PY" -m pytest -q "$@"
fi
status=0
"$PY" -m pytest -q -m "not browser" -n 2 || status=$?
"$PY" -m pytest -q -m browser || status=$?
exit "$status"
