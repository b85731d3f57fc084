#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test. Tests that need ../shared/data skip
# when it is absent. Extra args go to ctest, e.g. scripts/test.sh -L unit.
# Then the hostile-input stage (scripts/sanitize.sh, docs/fuzzing.md): the unit tests under
# ASan + UBSan and every fuzz harness for a bounded time. FANOUT_SKIP_SANITIZE=1 skips it for a
# quick local run; CI (.ci/run) always runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd "${FANOUT_BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@")
if [ "${FANOUT_SKIP_SANITIZE:-0}" = 1 ]; then
  echo "test.sh: FANOUT_SKIP_SANITIZE=1, skipping the sanitizer and fuzzing stage"
else
  bash scripts/sanitize.sh
fi
