// Writes that never leave a half-written file or folder behind: data goes to a temporary name beside the
// target (`<target>.tmp.<pid>`), is flushed to disk (fsync of the file, or of every file and folder of a staged
// folder), and is renamed over the target in one step (rename is atomic on POSIX); then the parent folder is
// flushed, so the rename survives a power loss too. A process killed mid-write leaves the temporary behind:
// remove_stale_temp_files() clears them at the next start.
#pragma once

#include <string>
#include <vector>

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

// True for the names these writes leave when interrupted: "<name>.tmp.<pid>" and "<name>.old.<pid>".
bool is_stale_temp_name(const std::string& name);

// Removes every entry of `dir` (and of its subfolders, `depth` levels down) whose name is_stale_temp_name;
// returns the paths removed. A "<name>.old.<pid>" whose "<name>" is missing (a kill between a staged commit's two
// renames) is renamed back instead. Call it at start, before this process writes there.
std::vector<std::string> remove_stale_temp_files(const std::string& dir, int depth);

}  // namespace verl
