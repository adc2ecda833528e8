#!/usr/bin/env bash
# Installs the npm dependencies when they are missing or older than package-lock.json, so that
# `npm start`, `npm test` and `npm run bench` work on a fresh clone without a separate step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm dependencies (npm ci)..." >&2
  npm ci --no-audit --no-fund >&2
fi
