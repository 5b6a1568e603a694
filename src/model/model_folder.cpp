#include "verl/model/model_folder.h"

#include <filesystem>

#include "verl/common/error.h"

namespace verl::model {

void require_model_file(const std::string& component, const std::string& key, const std::string& dir,
                        const std::string& shown_dir, const std::string& file, const std::string& hint) {
  VERL_CHECK(std::filesystem::exists(std::filesystem::path(dir) / file), component, key, "='", shown_dir,
             "' has no ", file, hint.empty() ? "" : " (" + hint + ")");
}

}  // namespace verl::model
