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

// Runs every command of `commands` in one python process, each as `__main__` with its own
// sys.argv: a script's path or "-m MODULE", then its arguments, split as a shell splits them (each
// python that imports torch costs about a second). Non-zero when any of them failed. No command
// may hold a single quote.
inline int PythonRuns(const std::vector<std::string>& commands) {
  std::string args =
      "-c 'import runpy, shlex, sys\n"
      "worst = 0\n"
      "for command in sys.argv[1:]:\n"
      "    argv = shlex.split(command)\n"
      "    module = argv[1] if argv[0] == \"-m\" else None\n"
      "    sys.argv = argv[1:] if module else argv\n"
      "    try:\n"
      "        runpy.run_module(module, run_name=\"__main__\", alter_sys=True) if module else "
      "runpy.run_path(argv[0], run_name=\"__main__\")\n"
      "    except SystemExit as e:\n"
      "        worst = max(worst, e.code if isinstance(e.code, int) else int(e.code is not None))\n"
      "sys.exit(worst)'";
  for (const std::string& c : commands) args += base::StrCat(" \"", c, "\"");
  return Python(args);
}

// `python3 -m fanout.export ARGS` for every ARGS of `exports`, in one process.
inline int Export(const std::vector<std::string>& exports) {
  std::vector<std::string> commands;
  for (const std::string& e : exports) commands.push_back("-m fanout.export " + e);
  return PythonRuns(commands);
}

// True when FANOUT_PYTHON has a torch of the LibTorch's major.minor (FANOUT_TORCH_VERSION): what
// one exports the other must load, and a build against PyTorch 2.x next to Debian's python3-torch
// 1.13 does not qualify. CMake asks when it configures (FANOUT_PYTHON_HAS_TORCH): install
// python3-torch, then re-run cmake.
inline bool HavePythonTorch() { return FANOUT_PYTHON_HAS_TORCH != 0; }

}  // namespace fanout::trainer::testing

#define SKIP_WITHOUT_PYTHON_TORCH()                                                                       \
  if (!::fanout::trainer::testing::HavePythonTorch())                                                     \
  GTEST_SKIP() << FANOUT_PYTHON << " has no torch " << FANOUT_TORCH_VERSION                                 \
               << " (the LibTorch fanout links; Debian: apt install python3-torch, then re-run cmake; a CUDA "  \
               << "build: the python whose torch it was built with)"
