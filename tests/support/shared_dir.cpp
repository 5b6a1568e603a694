#include "support/shared_dir.h"

#include <cstdlib>
#include <filesystem>

namespace verl::test {

std::string shared_dir() {
  if (const char* explicit_dir = std::getenv("VERL_SHARED_DIR")) return explicit_dir;
  const std::string beside = VERL_SOURCE_DIR_FOR_TESTS "/../shared";
  const std::string above = VERL_SOURCE_DIR_FOR_TESTS "/../../shared";
  if (!std::filesystem::is_directory(beside) && std::filesystem::is_directory(above + "/fixtures")) return above;
  return beside;
}

}  // namespace verl::test
