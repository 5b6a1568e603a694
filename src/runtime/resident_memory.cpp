#include "verl/runtime/resident_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace verl::runtime {

std::map<std::string, int64_t> proc_kib_fields(const std::string& path) {
  std::map<std::string, int64_t> bytes;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream value(line.substr(colon + 1));
    int64_t kib = -1;
    if (value >> kib && kib >= 0) bytes[line.substr(0, colon)] = kib * 1024;
  }
  return bytes;
}

int64_t peak_resident_bytes() {
  const auto fields = proc_kib_fields("/proc/self/status");
  const auto it = fields.find("VmHWM");
  return it == fields.end() ? -1 : it->second;
}

bool reset_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

}  // namespace verl::runtime
