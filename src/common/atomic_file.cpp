#include "verl/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "verl/common/error.h"

namespace verl {

namespace fs = std::filesystem;

namespace {
std::string temp_name_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}
}  // namespace

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
  if (had_old) fs::remove_all(old_path, ec);
}

}  // namespace verl
