// Running Debian's python3 (with python3-torch, the 1.13 fanout links) from the trainer tests.
// FANOUT_PYTHON, FANOUT_SOURCE_DIR and FANOUT_TORCH_OPS_LIB come from tests/trainer/CMakeLists.txt.
#pragma once

#include <cstdlib>
#include <string>

#include "core/strings.h"

namespace fanout::trainer::testing {

// Runs FANOUT_PYTHON `args` with python/fanout importable and fanout's operators findable;
// returns its exit status. Its standard output goes to `stdout_file`, its errors nowhere.
inline int Python(const std::string& args, const std::string& stdout_file = "/dev/null") {
  const std::string cmd = core::StrCat("PYTHONPATH=", FANOUT_SOURCE_DIR, "/python FANOUT_TORCH_OPS=",
                                       FANOUT_TORCH_OPS_LIB, " ", FANOUT_PYTHON, " ", args, " >", stdout_file,
                                       " 2>/dev/null");
  return std::system(cmd.c_str());
}

inline bool HavePythonTorch() {
  static const bool have = Python("-c 'import torch'") == 0;
  return have;
}

}  // namespace fanout::trainer::testing

#define SKIP_WITHOUT_PYTHON_TORCH()                 \
  if (!::fanout::trainer::testing::HavePythonTorch()) \
  GTEST_SKIP() << "python3 with torch is not installed (apt install python3-torch)"
