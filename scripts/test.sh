#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test. Tests that need ../shared/data skip
# when it is absent. Extra args go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${FANOUT_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
