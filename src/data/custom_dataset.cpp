#include "verl/data/custom_dataset.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/io/jsonl.h"
#include "verl/python/interpreter.h"

extern "C" char** environ;
extern const char verl_embedded_custom_dataset_loader_py[];  // src/data/custom_dataset_loader.py

namespace verl::data {

namespace {

constexpr const char* kCustomDatasetComponent = "data";
constexpr const char* kTimeoutKey = "data.custom_cls.timeout";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A folder for the request and the rows, removed with this object.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = str_cat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/verl-custom-dataset-XXXXXX");
    VERL_CHECK(::mkdtemp(pattern.data()) != nullptr, kCustomDatasetComponent,
               "cannot create a temporary folder for data.custom_cls: ", std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Starts the loader in a process group of its own (so that a timeout also ends the workers it forked) with
// signals as a fresh process has them; stdout and stderr are this process's (the class's prints show as in verl).
pid_t spawn_loader(const std::string& python, const std::string& request, const std::string& out_dir,
                   const std::string& source) {
  std::vector<std::string> args = {python, "-c", verl_embedded_custom_dataset_loader_py, request, out_dir};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (const int sig : {SIGALRM, SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, python.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  VERL_CHECK(rc == 0, kCustomDatasetComponent, source, ": cannot start '", python, "': ", std::strerror(rc));
  return pid;
}

// The child's wait status, or nullopt when it outlived `timeout_s` (> 0). Either way its process group is killed
// (workers the class left behind) while the child is not yet reaped: its id still names the group then.
std::optional<int> wait_for(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  while (true) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) break;
    if (rc < 0 && errno != EINTR) break;  // not our child any more (SIGCHLD ignored: already reaped)
    if (timeout_s > 0 && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::killpg(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (timed_out) return std::nullopt;
  return status;
}

}  // namespace

CustomDatasetRows load_custom_dataset(const CustomDatasetRequest& request) {
  CustomDatasetRows out;
  out.source = str_cat("data.custom_cls '", request.name, "' (", request.path, ")");
  VERL_CHECK(!request.name.empty(), "config", "data.custom_cls.path is '", request.path,
             "' but data.custom_cls.name is null; name the dataset class in it");
  ScratchDir scratch;
  nlohmann::ordered_json body = {{"parent_pid", static_cast<int64_t>(::getpid())},
                                 {"path", request.path},
                                 {"name", request.name},
                                 {"data_files", request.data_files},
                                 {"tokenizer_path", request.tokenizer_path},
                                 {"trust_remote_code", request.trust_remote_code},
                                 {"config", request.config},
                                 {"max_samples", request.max_samples}};
  const std::filesystem::path request_file = scratch.path() / "request.json";
  {
    std::ofstream f(request_file);
    f << body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    VERL_CHECK(f.good(), kCustomDatasetComponent, "cannot write ", request_file.string());
  }
  const std::string python = python::embedded_python_executable();
  VERL_LOG(Info, kCustomDatasetComponent) << out.source << ": loading the " << request.what << " data with " << python;
  const pid_t pid = spawn_loader(python, request_file.string(), scratch.path().string(), out.source);
  const std::optional<int> status = wait_for(pid, request.timeout_s);
  VERL_CHECK(status.has_value(), kCustomDatasetComponent, out.source, " did not finish loading the ", request.what,
             " data within ", request.timeout_s, " s (", kTimeoutKey, "; 0: no limit)");
  if (std::filesystem::exists(scratch.path() / "error.txt")) {
    VERL_FAIL(kCustomDatasetComponent, out.source, " failed on the ", request.what,
              " data: ", read_text(scratch.path() / "error.txt"));
  }
  const bool clean_exit = WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
  VERL_CHECK(clean_exit && std::filesystem::exists(scratch.path() / "summary.json"), kCustomDatasetComponent,
             out.source, ": its loader (", python, ") ",
             WIFSIGNALED(*status) ? str_cat("was ended by signal ", WTERMSIG(*status))
                                  : str_cat("exited with code ", WEXITSTATUS(*status)),
             " before every row of the ", request.what, " data was read (its output, if any, is above)");

  const nlohmann::json summary = nlohmann::json::parse(read_text(scratch.path() / "summary.json"));
  out.class_name = summary.at("class").get<std::string>();
  out.dropped_tensors = summary.at("dropped_tensors").get<std::vector<std::string>>();
  out.rows = io::read_jsonl((scratch.path() / "rows.jsonl").string());
  const auto expected = summary.at("rows").get<int64_t>();
  VERL_CHECK(static_cast<int64_t>(out.rows.size()) == expected, kCustomDatasetComponent, out.source, " wrote ",
             out.rows.size(), " rows of ", expected);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    const io::Value* prompt = out.rows[i].find("raw_prompt");
    VERL_CHECK(prompt != nullptr, kCustomDatasetComponent, out.source, " row ", i, " (", request.what,
               ") has no 'raw_prompt': verl's agent loop renders each prompt from the row's raw_prompt, its chat "
               "messages (RLHFDataset.__getitem__ sets it)");
    VERL_CHECK(prompt->is_list(), kCustomDatasetComponent, out.source, " row ", i, " (", request.what,
               "): 'raw_prompt' must be a list of chat messages ({role, content}), got ",
               io::kind_name(prompt->kind()));
  }
  VERL_LOG(Info, kCustomDatasetComponent)
      << out.source << ": " << out.class_name << " gave " << out.rows.size() << " " << request.what << " rows"
      << (out.dropped_tensors.empty() ? std::string()
                                      : str_cat(" (tensor fields left out, as verl's agent loop ignores them: ",
                                                join(out.dropped_tensors, ", "), ")"));
  return out;
}

}  // namespace verl::data
