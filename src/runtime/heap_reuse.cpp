#include "verl/runtime/heap_reuse.h"

#include <malloc.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "verl/common/logging.h"

namespace verl::runtime {

namespace {
bool env_set(const char* name) { return std::getenv(name) != nullptr; }
}  // namespace

bool configure_heap_reuse() {
  const char* opt_out = std::getenv("VERL_HEAP_REUSE");
  if (opt_out != nullptr && std::string(opt_out) == "0") return false;
  if (env_set("MALLOC_MMAP_MAX_") || env_set("MALLOC_MMAP_THRESHOLD_") || env_set("MALLOC_TRIM_THRESHOLD_") ||
      env_set("GLIBC_TUNABLES")) {
    return false;  // the user's own malloc tuning wins
  }
  // Large blocks come from the heap (brk) and stay there when freed; the heap grows 64 MiB at a time.
  bool ok = mallopt(M_MMAP_MAX, 0) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 && ok;  // hand back only a free top above 2 GiB
  ok = mallopt(M_TOP_PAD, 64 << 20) == 1 && ok;
  if (!ok) {
    VERL_LOG(Warn, "runtime") << "mallopt refused the heap-reuse settings; large tensors are mmapped per use";
  }
  return ok;
}

}  // namespace verl::runtime
