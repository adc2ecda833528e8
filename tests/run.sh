#!/usr/bin/env bash
# `npm test`: installs what is missing (npm packages; nats-server and Postgres from Debian when
# root), lints, type-checks, runs the tap suite against real NATS and Postgres, and ends with a
# plain "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash deploy/ensure-deps.sh || exit 1
if [ "$(id -u)" = 0 ]; then
  missing=()
  command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v catatonit >/dev/null 2>&1 || missing+=(catatonit)
  command -v caddy >/dev/null 2>&1 || missing+=(caddy)
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} from Debian..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" || exit 1
  fi
fi

failed_steps=0
echo "== lint (oxlint)"
npx oxlint -c .oxlintrc.json --deny-warnings $(node -p "require('./package.json').config.codeDirs") || failed_steps=$((failed_steps + 1))
echo "== format (oxfmt --check; \`npm run format\` rewrites)"
npx oxfmt --check $(node -p "require('./package.json').config.codeDirs") >/dev/null || {
  npx oxfmt --list-different $(node -p "require('./package.json').config.codeDirs") | sed 's/^/  not formatted: /'
  failed_steps=$((failed_steps + 1))
}
echo "== type-check (tsc --noEmit)"
npx tsc --noEmit -p tsconfig.json || failed_steps=$((failed_steps + 1))

echo "== tests (tap)"
mkdir -p .tap
# tap compiles its plugin list into node_modules; on a fresh install it still holds the default
# TypeScript plugin (ts-node, which cannot load TypeScript 7) until rebuilt from package.json's config.
npx tap build >/dev/null || failed_steps=$((failed_steps + 1))
report=.tap/report.tap
npx tap --reporter=tap "$@" | tee "$report"
tap_status=${PIPESTATUS[0]}

# Count the test points of each file's top-level subtests (one per t.test), not the per-file summary.
passed=$(grep -cE '^    ok [0-9]+' "$report" || true)
failed=$(grep -cE '^    not ok [0-9]+' "$report" || true)
failed=$((failed + failed_steps))
if [ "$tap_status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
summary="${passed} passed, ${failed} failed"
# Name what failed right above the count: CI keeps only the tail of a run's output.
{
  if [ "$failed" -ne 0 ]; then
    echo "failed:"
    # each failed test point with the first lines of its YAML diagnostic (---/... block)
    awk '/^ *not ok [0-9]+/ { print; yaml = 1; n = 0; next }
         yaml == 1 && /^ *---$/ { yaml = 2; next }
         yaml == 2 && /^ *\.\.\.$/ { yaml = 0; next }
         yaml == 2 { if (n++ < 12) print; next }
         { yaml = 0 }' "$report" | head -150 || true
    [ "$failed_steps" -ne 0 ] && echo "  ${failed_steps} step(s) before the tests (lint, type-check, tap build)"
  fi
  echo "$summary"
} > .tap/summary.txt
printf '\n'; cat .tap/summary.txt
[ "$failed" -eq 0 ] && [ "$tap_status" -eq 0 ]
