#!/usr/bin/env bash
# Installs the npm dependencies (versions pinned by package-lock.json) when they are missing or older than package-lock.json, so that
# `npm start`, `npm test` and `npm run bench` work on a fresh clone without a separate step.
set -euo pipefail
cd "$(dirname "$0")/.."
# A lock file that is only newer on disk (a fresh checkout or worktree beside an installed tree,
# a `git checkout` back and forth) installs nothing when every package it pins is the version
# installed: npm's own record of the tree (node_modules/.package-lock.json) is compared by content.
same_tree() {
  node -e '
    const fs = require("node:fs")
    const want = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages
    const have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages
    const key = (p) => (p ? `${p.version}|${p.integrity ?? ""}|${p.link ? "link" : ""}` : "-")
    for (const [path, p] of Object.entries(want)) {
      // optional packages are binaries of other platforms, absent here by design
      if (path === "" || p.optional) continue
      if (key(p) !== key(have[path])) process.exit(1)
    }
  ' 2>/dev/null
}
if [ ! -f node_modules/.package-lock.json ] || { [ package-lock.json -nt node_modules/.package-lock.json ] && ! same_tree; }; then
  # `npm install` installs the versions pinned in package-lock.json and keeps what is already there;
  # the lock file also lists every platform's optional binaries (oxlint, msgpackr), so `npm ci` on a
  # clean clone works too (what images and CI pipelines run).
  echo "installing npm dependencies (npm install, pinned by package-lock.json)..." >&2
  npm install --no-audit --no-fund >&2
fi
