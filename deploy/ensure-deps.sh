#!/usr/bin/env bash
# Installs the npm dependencies (versions pinned by package-lock.json) when they are missing or older than package-lock.json, so that
# `npm start`, `npm test` and `npm run bench` work on a fresh clone without a separate step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install` installs the versions pinned in package-lock.json and keeps what is already there;
  # the lock file also lists every platform's optional binaries (oxlint, msgpackr), so `npm ci` on a
  # clean clone works too (what images and CI pipelines run).
  echo "installing npm dependencies (npm install, pinned by package-lock.json)..." >&2
  npm install --no-audit --no-fund >&2
fi
