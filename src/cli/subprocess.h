// Running another program (this binary's own subcommands, for `compare`) and
// collecting what it printed: each step runs in its own process so its peak
// RSS and its failures stay its own.
#pragma once

#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::cli {

struct SubprocessResult {
  int exit_code = -1;  // the exit status; 128 + the signal when killed by one
  std::string out, err;
};

// argv[0] is the program's path; stdin is /dev/null. An error only when the
// program could not be started.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv);
// This process's own executable (/proc/self/exe).
Result<std::string> self_executable();

}  // namespace submoe::cli
