// Where the project's shared/ folder (fixtures, reference) is: $VERL_SHARED_DIR when set, else the first
// of <checkout>/../shared (CI and /work/main) and <checkout>/../../shared (worktrees one level deeper) that
// exists. Tests fail, not skip, when it is missing.
#pragma once

#include <string>

namespace verl::test {

std::string shared_dir();

}  // namespace verl::test
