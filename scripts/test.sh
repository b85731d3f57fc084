#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test. Tests that need ../shared/data skip
# when it is absent. Extra args go to ctest, e.g. scripts/test.sh -L unit.
# With FANOUT_SANITIZE=1 (CI's .ci/run sets it), then the hostile-input stage
# (scripts/sanitize.sh, docs/fuzzing.md): the unit tests under ASan + UBSan and every fuzz
# harness for a bounded time; anyone can run that stage alone with scripts/sanitize.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# The PyPI tool one test reads its output with (tensorboard, in a venv in the build folder): set-up,
# so made here, not inside the timed tests; that test makes it itself when run alone, and skips
# without PyPI.
bash tests/trainer/observability_test.sh venv "" "" "${FANOUT_BUILD_DIR:-build}/tensorboard-venv" >/dev/null || true
(cd "${FANOUT_BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@")
if [ "${FANOUT_SANITIZE:-0}" = 1 ]; then
  bash scripts/sanitize.sh
else
  echo "test.sh: every test ran; the sanitizer and fuzzing stage is scripts/sanitize.sh (CI runs it)"
fi
