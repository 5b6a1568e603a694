// The files a model folder must hold before anything loads from it: config.json (the architecture) and
// tokenizer.json, each possibly from a folder of its own (verl's model.hf_config_path / tokenizer_path).
#pragma once

#include <string>

namespace verl::model {

// An error "<key>='<shown_dir>' has no <file><hint>" (component `component`) unless `dir` holds `file`. `dir` is
// the folder as read (user folder expanded), `shown_dir` as the user wrote it; `hint` (may be empty) says which
// key would point elsewhere.
void require_model_file(const std::string& component, const std::string& key, const std::string& dir,
                        const std::string& shown_dir, const std::string& file, const std::string& hint = "");

}  // namespace verl::model
