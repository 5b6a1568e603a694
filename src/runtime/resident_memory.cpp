#include "verl/runtime/resident_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace verl::runtime {
namespace {

// A "Name:   123 kB" line of /proc/self/status in bytes; -1 when absent.
int64_t status_kib_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    int64_t kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

}  // namespace

int64_t peak_resident_bytes() { return status_kib_field("VmHWM"); }

bool reset_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

}  // namespace verl::runtime
