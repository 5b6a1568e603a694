// A CRC32C sidecar for files whose damage would otherwise go unnoticed (a checkpoint's optimizer and model
// state: a flipped byte in a float loads without complaint). `<file>.crc32c` holds "crc32c <8 hex digits>
// <size in bytes>\n", written atomically beside the file (inside a staged checkpoint folder, so both are
// published together); verify_file_digest reads the file back and fails with one line naming it on a mismatch.
//
//   write_file_digest(dir + "/optim_world_size_1_rank_0.pt");
//   verify_file_digest(path, "optim");   // at load; a file without a sidecar (older checkpoints) passes
#pragma once

#include <cstdint>
#include <string>

namespace verl {

std::string digest_path_for(const std::string& path);  // "<path>.crc32c"

// CRC32C of the whole file; errors name it.
uint32_t file_crc32c(const std::string& path, uint64_t* size = nullptr);

void write_file_digest(const std::string& path);

// Throws verl::Error(component, "'<path>' is damaged: ...") when the file does not match its sidecar.
// Returns false when there is no sidecar (nothing to check), true when it matched.
bool verify_file_digest(const std::string& path, const std::string& component);

}  // namespace verl
