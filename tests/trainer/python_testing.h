// Running a python3 with the torch fanout links (Debian's python3-torch for the 1.13 build) from
// the trainer tests. FANOUT_PYTHON, FANOUT_TORCH_VERSION, FANOUT_SOURCE_DIR and
// FANOUT_TORCH_OPS_LIB come from tests/trainer/CMakeLists.txt.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "base/strings.h"

namespace fanout::trainer::testing {

// Runs FANOUT_PYTHON `args` with python/fanout importable and fanout's operators findable;
// returns its exit status. Its standard output goes to `stdout_file`, its errors nowhere.
inline int Python(const std::string& args, const std::string& stdout_file = "/dev/null") {
  const std::string cmd = base::StrCat("PYTHONPATH=", FANOUT_SOURCE_DIR, "/python FANOUT_TORCH_OPS=",
                                       FANOUT_TORCH_OPS_LIB, " ", FANOUT_PYTHON, " ", args, " >", stdout_file,
                                       " 2>/dev/null");
  return std::system(cmd.c_str());
}

// `python3 -m fanout.export ARGS` for every ARGS of `exports`, in one process (each python that
// imports torch costs about a second); non-zero when any of them failed. No ARGS may hold a quote.
inline int Export(const std::vector<std::string>& exports) {
  std::string args =
      "-c 'import shlex, sys; from fanout.export import main; "
      "sys.exit(max(main(shlex.split(a)) for a in sys.argv[1:]))'";
  for (const std::string& e : exports) args += base::StrCat(" \"", e, "\"");
  return Python(args);
}

// True when FANOUT_PYTHON has a torch of the LibTorch's major.minor (FANOUT_TORCH_VERSION): what
// one exports the other must load, and a build against PyTorch 2.x next to Debian's python3-torch
// 1.13 does not qualify.
inline bool HavePythonTorch() {
  static const bool have =
      Python(base::StrCat("-c 'import sys, torch; sys.exit(0 if torch.__version__.startswith(\"", FANOUT_TORCH_VERSION,
                          ".\") else 1)'")) == 0;
  return have;
}

}  // namespace fanout::trainer::testing

#define SKIP_WITHOUT_PYTHON_TORCH()                                                                       \
  if (!::fanout::trainer::testing::HavePythonTorch())                                                     \
  GTEST_SKIP() << FANOUT_PYTHON << " has no torch " << FANOUT_TORCH_VERSION                                 \
               << " (the LibTorch fanout links; Debian: apt install python3-torch; a CUDA build: the python " \
               << "whose torch it was built with)"
