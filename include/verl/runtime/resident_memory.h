// The process's peak resident memory as Linux reports it (/proc/self/status), over a window: the benches
// report which phase sets a run's peak, the figure compared with the peers' (bench/RESULTS.md). The /proc reader
// also serves the machine's used memory (memory_usage.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace verl::runtime {

// The numeric fields of a /proc file of "Name:   123 kB" lines (/proc/self/status, /proc/meminfo), in bytes by
// name; empty where the file cannot be read.
std::map<std::string, int64_t> proc_kib_fields(const std::string& path);

// VmHWM (the peak since the start or the last reset) in bytes; -1 where /proc cannot be read.
int64_t peak_resident_bytes();
// Starts a new peak window (writes 5 to /proc/self/clear_refs: VmHWM restarts from the current VmRSS).
// Returns false where the kernel does not allow it (then peak_resident_bytes stays the process's peak).
bool reset_peak_resident();

}  // namespace verl::runtime
