// Writes that never leave a half-written file or folder behind: data goes to a temporary name beside the
// target, is flushed to disk, and is renamed over the target in one step (rename is atomic on POSIX).
#pragma once

#include <string>

namespace verl {

// Writes `bytes` to `path` atomically; the parent folder must exist. Errors name the path.
void write_file_atomic(const std::string& path, const std::string& bytes);

// A temporary folder beside `final_path` to fill, then publish with commit(). If destroyed without
// commit() (an error while writing), the temporary folder is removed and `final_path` is untouched.
class StagedDirectory {
 public:
  explicit StagedDirectory(std::string final_path);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& path() const { return staging_path_; }  // where to write
  // Replaces `final_path` (an existing folder there is removed only after the new one is complete).
  void commit();

 private:
  std::string final_path_;
  std::string staging_path_;
  bool committed_ = false;
};

}  // namespace verl
