// custom_reward_function as a shared library with the C ABI of verl/reward/reward_plugin.h.
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "verl/common/watchdog.h"
#include "verl/python/user_code.h"
#include "verl/reward/reward_plugin.h"
#include "verl/reward/scorers/custom_reward_function.h"

namespace verl::reward {

namespace {

struct Plugin {
  void* handle = nullptr;
  verl_reward_plugin_fn function = nullptr;
  std::string path;
  std::string name;
  std::string kwargs_json;
  std::mutex mutex;  // the ABI promises one call at a time

  Plugin() = default;
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  ~Plugin() {
    if (handle != nullptr) dlclose(handle);
  }
};

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ComputeScoreFn load_plugin_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits) {
  auto plugin = std::make_shared<Plugin>();
  plugin->path = path;
  plugin->name = name;
  plugin->kwargs_json = json_text(reward_kwargs.is_null() ? nlohmann::json::object() : reward_kwargs);
  // An absolute path, so that dlopen does not search the library path for a bare file name.
  const std::string absolute = std::filesystem::absolute(path).lexically_normal().string();
  dlerror();
  plugin->handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin->handle == nullptr) {
    const char* message = dlerror();
    VERL_FAIL("reward", "cannot load reward plugin '", path, "' (function '", name,
              "'): ", message != nullptr ? message : "dlopen failed");
  }
  dlerror();
  void* symbol = dlsym(plugin->handle, name.c_str());
  const char* message = dlerror();
  VERL_CHECK(message == nullptr && symbol != nullptr, "reward", "reward function '", name, "' not found in '", path,
             "' (custom_reward_function.name; the plugin must export it with extern \"C\", see "
             "verl/reward/reward_plugin.h)");
  plugin->function = reinterpret_cast<verl_reward_plugin_fn>(symbol);

  return [plugin, limits](const std::string& data_source, const std::string& solution_str,
                  const nlohmann::json& ground_truth, const nlohmann::json& extra_info) {
    const std::string truth = ground_truth.is_string() ? ground_truth.get<std::string>() : json_text(ground_truth);
    const std::string extra = json_text(extra_info.is_null() ? nlohmann::json::object() : extra_info);
    std::vector<char> error(4096, '\0');
    double score = 0.0;
    int rc = 0;
    {
      std::lock_guard<std::mutex> lock(plugin->mutex);
      // Native code cannot be interrupted: past the limit (and the grace Python code gets) the process ends.
      ExitGuard exit_guard(str_cat("[reward] reward plugin function '", plugin->name, "' from '", plugin->path,
                                   "' called exit() during a reward function call; the process ends with exit code 1"));
      std::unique_ptr<WatchdogGuard> limit;
      if (limits.timeout_s > 0) {
        WatchdogAlarm alarm;
        alarm.hard_after_s = limits.timeout_s + python::kUserCodeGraceSeconds;
        alarm.hard_message = str_cat("[reward] reward plugin function '", plugin->name, "' from '", plugin->path,
                                     "' did not return within ", limits.timeout_s, " s (", limits.timeout_key,
                                     "); native code cannot be interrupted, so the process ends");
        limit = std::make_unique<WatchdogGuard>(std::move(alarm));
      }
      try {
        rc = plugin->function(data_source.c_str(), solution_str.c_str(), truth.c_str(), extra.c_str(),
                              plugin->kwargs_json.c_str(), &score, error.data(), error.size());
      } catch (const std::exception& e) {  // a C++ plugin that lets an exception escape
        throw RewardFunctionError("reward", std::string("plugin threw: ") + e.what());
      } catch (...) {
        throw RewardFunctionError("reward", "plugin threw a non-standard exception");
      }
    }
    if (rc != 0) {
      error.back() = '\0';
      const std::string text = error.data();
      throw RewardFunctionError("reward", "plugin returned " + std::to_string(rc) +
                                              (text.empty() ? std::string() : ": " + text));
    }
    return ScoreResult::scalar(score);
  };
}

}  // namespace verl::reward
