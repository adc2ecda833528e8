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
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
  command -v clickhouse-server >/dev/null 2>&1 || missing+=(clickhouse-server)
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} from Debian..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" || exit 1
  fi
fi

mkdir -p .tap
# The Go tools the chart test uses (helm, kubeconform), built into the machine cache in the
# background while the steps below run (minutes on a fresh machine, nothing once cached); the test
# waits for a build still in progress. Its lines: .tap/go-tools.log. Only on a whole run: a run of
# named files builds a tool only when one of them needs it. Its own process group, so that the end
# of the run can stop the `go` commands too.
go_tools_pid=''
if [ $# -eq 0 ]; then
  setsid node --import=tsx tests/setup/go-tools.ts > .tap/go-tools.log 2>&1 &
  go_tools_pid=$!
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
# The native compiler (TypeScript 7) has been seen to die of SIGSEGV on a saturated host, in its
# worker threads: a crash (exit code from a signal) is run again single-threaded, a type error is not.
typecheck() {
  npx tsc --noEmit -p "$1"
  local rc=$?
  if [ $rc -ge 128 ]; then
    echo "tsc -p $1 crashed (exit $rc); again with --singleThreaded"
    npx tsc --noEmit --singleThreaded -p "$1"
    rc=$?
  fi
  return $rc
}
typecheck tsconfig.json || failed_steps=$((failed_steps + 1))
# the console (browser code, DOM types): its own tsconfig
typecheck console/tsconfig.json || failed_steps=$((failed_steps + 1))

echo "== nats-server"
# The suite runs on the pinned current release: built with Go into the machine cache once per
# machine when missing (a minute), else Debian's server with the reason printed (no failure).
current_nats=$(node --import=tsx tests/setup/nats-server.ts) || current_nats=''

echo "== tests (tap)"
# tap compiles its plugin list into node_modules; on a fresh install it still holds the default
# TypeScript plugin (ts-node, which cannot load TypeScript 7) until rebuilt from package.json's config.
npx tap build >/dev/null || failed_steps=$((failed_steps + 1))
report=.tap/report.tap
npx tap --reporter=tap "$@" | tee "$report"
tap_status=${PIPESTATUS[0]}

# The compatibility pass: the files that lean on JetStream the most (the actor runtime, jobs, KV,
# SSE streams) again on Debian's nats-server 2.9.10, the oldest server the platform supports, with
# their own shared services (TEST_SERVICES_NAME). Only on a whole run, and only when 2.9.10 is not
# what the main pass ran on. Its files are named `[nats-server <version>] tests/...` in its report.
# The files that only check logic above JetStream (protocols, the outbox, job errors, the fair
# share's lines, partition-count changes through the CLI) run once, in the main pass.
compat_bin=/usr/sbin/nats-server
compat_report=.tap/report-compat.tap
# (about 2 minutes on a quiet 2-core machine)
compat_files=(tests/actors/runtime.test.ts tests/actors/writes-in-flight.test.ts
  tests/jobs/jobs.test.ts tests/jobs/failures.test.ts tests/jobs/state-ttl.test.ts tests/jobs/mirror-linger.test.ts
  tests/jobs/deferred-claim.test.ts
  tests/platform/jetstream.test.ts tests/platform/acked-publish.test.ts tests/platform/nats-server-version.test.ts
  tests/gateway/sse.test.ts tests/chats/stream.test.ts)
compat_status=0
rm -f "$compat_report"
version_of() { "$1" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1; }
if [ $# -gt 0 ]; then
  echo "== compatibility pass skipped: test files were named"
elif [ ! -x "$compat_bin" ]; then
  echo "== compatibility pass skipped: no $compat_bin"
elif [ -n "$current_nats" ] && [ "$(version_of "$compat_bin")" = "$(version_of "$current_nats")" ]; then
  echo "== compatibility pass skipped: the main pass already ran on $compat_bin's version ($(version_of "$compat_bin"))"
else
  compat_version=$(version_of "$compat_bin")
  echo "== compatibility (nats-server ${compat_version} at ${compat_bin}: actors, jobs, KV, SSE)"
  NATS_SERVER_BIN="$compat_bin" TEST_SERVICES_NAME=compat npx tap --reporter=tap "${compat_files[@]}" \
    | sed -E "s,^(# Subtest: |(not )?ok [0-9]+ - )(tests/),\1[nats-server ${compat_version}] \3," | tee "$compat_report"
  compat_status=${PIPESTATUS[0]}
fi

# a build the chart test never waited for (it was skipped, or files were named) does not outlive the run
[ -n "$go_tools_pid" ] && kill -- "-$go_tools_pid" 2>/dev/null

# Count the test points of each file's top-level subtests (one per t.test), not the per-file summary;
# both passes' reports.
reports=("$report")
[ -f "$compat_report" ] && reports+=("$compat_report")
passed=$(cat "${reports[@]}" | grep -cE '^    ok [0-9]+' || true)
failed=$(cat "${reports[@]}" | grep -cE '^    not ok [0-9]+' || true)
failed=$((failed + failed_steps))
if { [ "$tap_status" -ne 0 ] || [ "$compat_status" -ne 0 ]; } && [ "$failed" -eq 0 ]; then failed=1; fi
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
         { yaml = 0 }' "${reports[@]}" | head -150 || true
    [ "$failed_steps" -ne 0 ] && echo "  ${failed_steps} step(s) before the tests (lint, type-check, tap build)"
  fi
  echo "$summary"
} > .tap/summary.txt
printf '\n'; cat .tap/summary.txt
[ "$failed" -eq 0 ] && [ "$tap_status" -eq 0 ] && [ "$compat_status" -eq 0 ]
