#include "verl/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "verl/common/error.h"

namespace verl {

namespace fs = std::filesystem;

namespace {

std::string temp_name_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

// fsync of a file or folder by path; errors name it.
void sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  VERL_CHECK(fd >= 0, "io", "cannot open '", path, "' to flush it to disk: ", std::strerror(errno));
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  VERL_CHECK(synced, "io", "cannot flush '", path, "' to disk: ", std::strerror(err));
}

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Every file and folder under `dir`, then `dir` itself: what a rename of `dir` publishes is on disk.
void sync_tree(const std::string& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() || entry.is_directory()) sync_path(entry.path().string(), entry.is_directory());
  }
  sync_path(dir, true);
}

}  // namespace

bool is_stale_temp_name(const std::string& name) {
  for (const char* marker : {".tmp.", ".old."}) {
    const size_t at = name.rfind(marker);
    if (at == std::string::npos || at == 0) continue;
    const std::string pid = name.substr(at + std::strlen(marker));
    if (!pid.empty() && pid.size() <= 10 && pid.find_first_not_of("0123456789") == std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir, int depth) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (depth < 0 || !fs::is_directory(dir, ec)) return removed;
  std::vector<fs::path> subfolders;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_stale_temp_name(name)) {
      // Killed between StagedDirectory::commit's two renames: the previous version is the only one; put it back.
      const size_t old_at = name.rfind(".old.");
      if (old_at != std::string::npos) {
        const fs::path target = entry.path().parent_path() / name.substr(0, old_at);
        if (!fs::exists(target, ec)) {
          fs::rename(entry.path(), target, ec);
          VERL_CHECK(!ec, "io", "cannot restore '", target.string(), "' from '", entry.path().string(),
                     "': ", ec.message());
          subfolders.push_back(target);
          continue;
        }
      }
      fs::remove_all(entry.path(), ec);
      VERL_CHECK(!ec, "io", "cannot remove the stale temporary '", entry.path().string(), "': ", ec.message());
      removed.push_back(entry.path().string());
    } else if (entry.is_directory() && !entry.is_symlink()) {
      subfolders.push_back(entry.path());
    }
  }
  for (const auto& sub : subfolders) {
    for (auto& path : remove_stale_temp_files(sub.string(), depth - 1)) removed.push_back(std::move(path));
  }
  return removed;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::string temp = temp_name_for(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  VERL_CHECK(fd >= 0, "io", "cannot write '", path, "': ", std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      VERL_FAIL("io", "cannot write '", path, "': ", std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    VERL_FAIL("io", "cannot write '", path, "': ", std::strerror(err));
  }
  sync_path(parent_of(path), true);  // the rename itself
}

StagedDirectory::StagedDirectory(std::string final_path)
    : final_path_(std::move(final_path)), staging_path_(temp_name_for(final_path_)) {
  std::error_code ec;
  fs::remove_all(staging_path_, ec);
  fs::create_directories(staging_path_, ec);
  VERL_CHECK(!ec, "io", "cannot create folder '", staging_path_, "': ", ec.message());
}

StagedDirectory::~StagedDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_path_, ec);  // best effort: never throw from a destructor
  }
}

void StagedDirectory::commit() {
  VERL_ASSERT(!committed_, "io", "staged folder committed twice");
  sync_tree(staging_path_);  // the files (written by whatever writer) are on disk before they are published
  std::error_code ec;
  const std::string old_path = final_path_ + ".old." + std::to_string(::getpid());
  const bool had_old = fs::exists(final_path_);
  if (had_old) {
    fs::rename(final_path_, old_path, ec);
    VERL_CHECK(!ec, "io", "cannot replace '", final_path_, "': ", ec.message());
  }
  fs::rename(staging_path_, final_path_, ec);
  if (ec) {
    if (had_old) fs::rename(old_path, final_path_);  // put the previous version back
    VERL_FAIL("io", "cannot publish '", final_path_, "': ", ec.message());
  }
  committed_ = true;
  sync_path(parent_of(final_path_), true);
  if (had_old) fs::remove_all(old_path, ec);
}

}  // namespace verl
