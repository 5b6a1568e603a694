// custom_reward_function as a verl-style Python file, run unchanged in the embedded interpreter. A plain function is
// called on the calling thread; an `async def`, and every call of the rate_limited manager, run on the process's
// reward event loop (python/async_calls.h), one batch at a time.
#include <cmath>
#include <memory>
#include <mutex>
#include <string>

#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/config/ppo_config.h"
#include "verl/python/async_calls.h"
#include "verl/python/interpreter.h"
#include "verl/python/user_code.h"
#include "verl/reward/scorers/custom_reward_function.h"

namespace py = pybind11;

namespace verl::reward {

namespace {

// verl's get_custom_reward_fn: importlib spec loading under the module name "custom_module".
const char* const kLoaderSource = R"PY(
import importlib.util
import sys

def load(path):
    spec = importlib.util.spec_from_file_location("custom_module", path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python source file (use a .py file, or a .so plugin)")
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    return module
)PY";

// The batch runner on the reward event loop (verl 0.9.1's reward loop: RewardLoopWorker.compute_score_batch and
// RateLimitedRewardManager). verl keeps the rate limits in class attributes, shared by every manager of a process;
// here managers with the same settings share them (a run's training and validation managers).
const char* const kBatchDriverSource = R"PY(
import asyncio
import traceback

from _verl_cpp_async import CallTimeout, describe, in_daemon_thread, invoke, with_timeout


class TokenBucket:
    """Refills at `rate` tokens a second up to `rate` (one second's burst) and starts full, as verl's
    AsyncTokenBucket; a request for more than that waits for its deficit and leaves the bucket below zero."""

    def __init__(self, rate):
        self.rate = rate
        self.capacity = rate
        self.tokens = rate
        self.last = None
        self.lock = asyncio.Lock()

    def refill(self):
        now = asyncio.get_running_loop().time()
        if self.last is None:
            self.last = now
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now

    async def acquire(self, count):
        if count > self.capacity:
            async with self.lock:
                self.refill()
                wait = max(count - self.tokens, 0.0) / self.rate
                self.tokens -= count
            if wait > 0:
                await asyncio.sleep(wait)
            return
        while True:
            async with self.lock:
                self.refill()
                if self.tokens >= count:
                    self.tokens -= count
                    return
                wait = (count - self.tokens) / self.rate
            await asyncio.sleep(wait)


class Budget:
    def __init__(self, settings):
        max_concurrent, max_rpm, max_tpm, tokens_per_request = settings
        self.semaphore = asyncio.Semaphore(max_concurrent)
        self.rpm = TokenBucket(max_rpm / 60.0) if max_rpm is not None else None
        self.tpm = TokenBucket(max_tpm / 60.0) if max_tpm is not None else None
        self.tokens_per_request = tokens_per_request


BUDGETS = {}  # by settings: a run's training and validation managers share one, as verl's class attributes


def located(exc):
    """describe(exc) and the innermost frame of user code."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not frame.filename.startswith("<"):
            return f"{describe(exc)} (at {frame.filename}:{frame.lineno})"
    return describe(exc)


def start_batch(fn, kwargs_list, is_async, timeout, settings, what):
    """(results, coroutine): run the coroutine on the loop, then read results[i]: ("ok", value) | ("timeout",) |
    ("error", text, str(exc)) | None (the loop was stopped first)."""
    budget = None
    if settings is not None:
        if settings not in BUDGETS:
            BUDGETS[settings] = Budget(settings)
        budget = BUDGETS[settings]
    results = [None] * len(kwargs_list)

    async def call(kwargs):
        if is_async:
            return await with_timeout(invoke(fn, **kwargs), timeout)
        return await with_timeout(in_daemon_thread(fn, kwargs, what), timeout)

    async def one(i, kwargs):
        try:
            if budget is None:
                results[i] = ("ok", await call(kwargs))
                return
            if budget.rpm is not None:
                await budget.rpm.acquire(1.0)
            if budget.tpm is not None:
                await budget.tpm.acquire(budget.tokens_per_request)
            async with budget.semaphore:
                results[i] = ("ok", await call(kwargs))
        except CallTimeout:
            results[i] = ("timeout",)
        except Exception as exc:
            results[i] = ("error", located(exc), str(exc))

    async def run_all():
        await asyncio.gather(*(one(i, kwargs) for i, kwargs in enumerate(kwargs_list)))

    return results, run_all()


def cancel_pending(loop):
    """Cancels what a stopped batch left on the loop, so that none of it runs during the next batch."""
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.wait(tasks, timeout=0.1))
)PY";

constexpr double kBackstopSlackSeconds = 2.0;

py::object json_to_python(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list list;
      for (const auto& item : value) list.append(json_to_python(item));
      return std::move(list);
    }
    case nlohmann::json::value_t::object: {
      py::dict dict;
      for (const auto& [key, item] : value.items()) dict[py::str(key)] = json_to_python(item);
      return std::move(dict);
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return py::none();
}

// "Type: message (at file.py:12)" for a Python exception raised by user code (GIL held).
std::string describe_user_error(const py::error_already_set& error) {
  std::string text = python::describe_python_error(error);
  try {
    if (error.trace() && !error.trace().is_none()) {
      py::list frames = py::module_::import("traceback").attr("extract_tb")(error.trace());
      // The innermost frame of the user's code (the os._exit guard of python/user_code.h is not theirs).
      for (size_t i = py::len(frames); i-- > 0;) {
        py::object frame = frames[i];
        const std::string file = py::str(frame.attr("filename")).cast<std::string>();
        if (file == "<verl.cpp exit guard>") continue;
        text += " (at " + file + ":" + py::str(frame.attr("lineno")).cast<std::string>() + ")";
        break;
      }
    }
  } catch (...) {
  }
  return text;
}

bool is_number_like(const py::handle& value) {
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) return false;
  return py::isinstance<py::bool_>(value) || py::isinstance<py::int_>(value) ||
         py::isinstance<py::float_>(value) || py::hasattr(value, "__float__");
}

ExtraValue to_extra_value(const py::handle& value, bool allow_item = true) {
  if (value.is_none()) return std::monostate{};
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    try {
      return value.cast<int64_t>();
    } catch (const py::cast_error&) {
      return py::str(value).cast<std::string>();  // beyond int64
    }
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (allow_item && py::hasattr(value, "item") && py::hasattr(value, "dtype")) {
    py::object item = value.attr("item")();  // numpy scalar -> Python scalar
    return to_extra_value(item, /*allow_item=*/false);
  }
  return py::str(value).cast<std::string>();
}

// The loaded function and the reward_kwargs; Python objects are released with the GIL held.
struct PythonFunction {
  py::object function;  // null until loaded
  py::object kwargs;    // a dict once loaded
  bool is_async = false;
  std::string path;
  std::string name;
  UserCodeLimits limits;

  PythonFunction() = default;
  PythonFunction(const PythonFunction&) = delete;
  PythonFunction& operator=(const PythonFunction&) = delete;
  ~PythonFunction() {
    if (!function && !kwargs) return;
    py::gil_scoped_acquire gil;
    function = py::object();
    kwargs = py::object();
  }

  std::string who() const { return "reward function '" + name + "' from '" + path + "'"; }
};

// The process's reward event loop and its driver; one batch at a time (the mutex is taken before the GIL).
struct RewardEventLoop {
  std::mutex mutex;
  py::object loop, driver;  // made with the GIL held; kept until the process ends (never destroyed)
};

RewardEventLoop& reward_event_loop() {
  static RewardEventLoop* const instance = new RewardEventLoop();  // leaked: no Python object outlives the interpreter
  return *instance;
}

// The call's keyword arguments: verl's wrapped_fn passes **reward_kwargs after them; a repeated key is a TypeError.
py::dict call_kwargs(const PythonFunction& f, const ScoreCall& call) {
  py::dict kwargs;
  kwargs["data_source"] = py::str(call.data_source);
  kwargs["solution_str"] = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(call.solution_str.data(), static_cast<Py_ssize_t>(call.solution_str.size()), "replace"));
  kwargs["ground_truth"] = json_to_python(call.ground_truth);
  kwargs["extra_info"] = json_to_python(call.extra_info);
  for (const auto& item : f.kwargs.cast<py::dict>()) {
    if (kwargs.contains(item.first)) {
      throw RewardFunctionError("reward", "TypeError: got multiple values for keyword argument '" +
                                              py::str(item.first).cast<std::string>() +
                                              "' (custom_reward_function.reward_kwargs)");
    }
    kwargs[item.first] = item.second;
  }
  return kwargs;
}

// What the function returned, as a ScoreResult (GIL held); a value that is not a score is the function's error.
ScoreResult to_score_result(const py::object& result, const std::string& who) {
  try {
    if (py::isinstance<py::dict>(result)) {
      py::dict dict = result.cast<py::dict>();
      if (!dict.contains("score"))
        throw RewardFunctionError("reward", who + " returned a dict without a \"score\" key");
      py::object score = dict["score"];
      if (!is_number_like(score)) {
        throw RewardFunctionError("reward", who + " returned a dict whose \"score\" is " +
                                                py::str(py::type::of(score).attr("__name__")).cast<std::string>() +
                                                ", expected a number");
      }
      ScoreResult out;
      out.score = py::float_(score).cast<double>();
      out.is_dict = true;
      for (const auto& item : dict) {
        const std::string key = py::str(item.first).cast<std::string>();
        if (key == "score") continue;
        out.extra.emplace_back(key, to_extra_value(item.second));
      }
      return out;
    }
    if (!is_number_like(result)) {
      throw RewardFunctionError("reward", who + " returned " +
                                              py::str(py::type::of(result).attr("__name__")).cast<std::string>() +
                                              "; expected a number (float, int, bool) or a dict with a \"score\" key");
    }
    return ScoreResult::scalar(py::float_(result).cast<double>());
  } catch (py::error_already_set& error) {  // e.g. __float__ raising
    throw RewardFunctionError("reward", describe_user_error(error));
  }
}

// A plain function, called on this thread under its time limit.
ScoreResult call_plain(const PythonFunction& f, const ScoreCall& call) {
  return python::with_gil("reward", [&] {
    py::dict kwargs = call_kwargs(f, call);
    py::object result;
    python::UserCallLimit limit(f.limits.timeout_s, f.who(), f.limits.timeout_key);
    try {
      result = f.function(**kwargs);
    } catch (py::error_already_set& error) {
      if (limit.expired()) throw RewardFunctionError("reward", limit.timeout_message());
      throw RewardFunctionError("reward", describe_user_error(error));
    }
    // Code that caught the TimeoutError and returned anyway still ran past the limit.
    if (limit.expired()) throw RewardFunctionError("reward", limit.timeout_message());
    return to_score_result(result, f.who());
  });
}

ScoreOutcome failed(std::string error, std::string raised, bool timed_out = false) {
  ScoreOutcome out;
  out.error = std::move(error);
  out.raised = std::move(raised);
  out.timed_out = timed_out;
  return out;
}

// The longest a batch may take within its limits, plus slack; 0 (no backstop) when calls have no time limit.
double batch_backstop_s(size_t calls, double timeout_s, const config::RewardRateLimits* rate_limits) {
  if (timeout_s <= 0) return 0.0;
  if (rate_limits == nullptr) return timeout_s + kBackstopSlackSeconds;
  const double n = static_cast<double>(calls);
  double seconds = std::ceil(n / static_cast<double>(rate_limits->max_concurrent)) * timeout_s;
  if (rate_limits->max_rpm) seconds += n / *rate_limits->max_rpm * 60.0;
  if (rate_limits->max_tpm) {
    seconds += n * static_cast<double>(rate_limits->estimated_tokens_per_request) / *rate_limits->max_tpm * 60.0;
  }
  return seconds + kBackstopSlackSeconds;
}

// Every call on the reward event loop (async defs, and every call under a rate limit).
std::vector<ScoreOutcome> run_on_event_loop(const PythonFunction& f, const std::vector<ScoreCall>& calls,
                                            const config::RewardRateLimits* rate_limits) {
  RewardEventLoop& runner = reward_event_loop();
  std::lock_guard<std::mutex> lock(runner.mutex);
  return python::with_gil("reward", [&] {
    if (!runner.loop) {
      python::async_calls_module();
      py::module_ module = py::module_::import("types").attr("ModuleType")("_verl_cpp_reward_batch");
      module.attr("__builtins__") = py::module_::import("builtins");
      py::exec(kBatchDriverSource, module.attr("__dict__"));
      runner.driver = module;
      runner.loop = py::module_::import("asyncio").attr("new_event_loop")();
    }
    std::vector<ScoreOutcome> outcomes(calls.size());
    py::list kwargs_list;
    for (size_t i = 0; i < calls.size(); ++i) {
      try {
        kwargs_list.append(call_kwargs(f, calls[i]));
      } catch (const RewardFunctionError& e) {  // the same for every call
        for (ScoreOutcome& outcome : outcomes) outcome = failed(e.message(), e.message());
        return outcomes;
      }
    }
    const double timeout_s = rate_limits != nullptr ? rate_limits->timeout : f.limits.timeout_s;
    const std::string timeout_key = rate_limits != nullptr ? "reward.timeout" : f.limits.timeout_key;
    py::object settings = py::none();
    if (rate_limits != nullptr) {
      settings = py::make_tuple(rate_limits->max_concurrent,
                                rate_limits->max_rpm ? py::object(py::float_(*rate_limits->max_rpm)) : py::none(),
                                rate_limits->max_tpm ? py::object(py::float_(*rate_limits->max_tpm)) : py::none(),
                                rate_limits->estimated_tokens_per_request);
    }
    py::tuple started =
        runner.driver.attr("start_batch")(f.function, kwargs_list, f.is_async, timeout_s, settings, f.who());
    const std::string batch_what = str_cat(f.who(), " (", calls.size(), " calls at once)");
    bool stopped = false;
    {
      python::UserCallLimit limit(batch_backstop_s(calls.size(), timeout_s, rate_limits), batch_what, timeout_key);
      try {
        runner.loop.attr("run_until_complete")(started[1]);
      } catch (py::error_already_set& error) {
        if (!limit.expired()) {
          const std::string text = python::describe_python_error(error);
          // The batch's other tasks must not run during the next batch on this shared loop.
          try {
            runner.driver.attr("cancel_pending")(runner.loop);
          } catch (py::error_already_set& cancel_error) {
            VERL_LOG(Warn, "reward") << batch_what << ": cancelling the stopped batch's tasks failed: "
                                     << python::describe_python_error(cancel_error);
          }
          throw Error("reward", batch_what + ": the event loop stopped: " + text);
        }
      }
      stopped = limit.expired();
    }
    if (stopped) runner.driver.attr("cancel_pending")(runner.loop);
    const std::string timeout_text = str_cat(f.who(), " did not return within ", timeout_s, " s (", timeout_key, ")");
    const std::string backstop_text =
        str_cat(batch_what, " blocked the event loop past the batch's time limit (", timeout_key, ")");
    py::list results = started[0];
    for (size_t i = 0; i < calls.size(); ++i) {
      py::object entry = results[i];
      if (entry.is_none()) {
        outcomes[i] = failed(backstop_text, backstop_text, true);
        continue;
      }
      py::tuple result = entry;
      const std::string state = result[0].cast<std::string>();
      if (state == "timeout") {
        outcomes[i] = failed(timeout_text, timeout_text, true);
      } else if (state == "error") {
        const std::string text = result[1].cast<std::string>();
        if (stopped && starts_with(text, "TimeoutError")) {
          outcomes[i] = failed(backstop_text, backstop_text, true);  // the backstop's TimeoutError, not the code's
        } else {
          outcomes[i] = failed(text, result[2].cast<std::string>());
        }
      } else {
        try {
          outcomes[i].result = to_score_result(result[1], f.who());
        } catch (const RewardFunctionError& e) {
          outcomes[i] = failed(e.message(), e.message());
        }
      }
    }
    return outcomes;
  });
}

std::vector<ScoreOutcome> score_batch(const PythonFunction& f, const std::vector<ScoreCall>& calls,
                                      const config::RewardRateLimits* rate_limits) {
  if (calls.empty()) return {};
  if (rate_limits != nullptr || f.is_async) return run_on_event_loop(f, calls, rate_limits);
  std::vector<ScoreOutcome> outcomes;
  outcomes.reserve(calls.size());
  for (const ScoreCall& call : calls) {
    try {
      ScoreOutcome outcome;
      outcome.result = call_plain(f, call);
      outcomes.push_back(std::move(outcome));
    } catch (const RewardFunctionError& e) {
      outcomes.push_back(failed(e.message(), e.message()));
    }
  }
  return outcomes;
}

}  // namespace

RewardFunction load_python_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits) {
  auto loaded = std::make_shared<PythonFunction>();
  loaded->path = path;
  loaded->name = name;
  loaded->limits = limits;
  python::with_gil("reward", [&] {
    python::install_exit_guards();  // before the module runs: `from os import _exit` gets the guarded one
    py::dict scope;
    scope["__builtins__"] = py::module_::import("builtins");
    py::exec(kLoaderSource, scope);
    py::object module;
    try {
      module = scope["load"](path);
    } catch (py::error_already_set& error) {
      VERL_FAIL("reward", "cannot load reward function file '", path, "' (function '", name,
                "'): ", describe_user_error(error));
    }
    VERL_CHECK(py::hasattr(module, name.c_str()), "reward", "reward function '", name, "' not found in '", path,
               "' (custom_reward_function.name)");
    py::object function = module.attr(name.c_str());
    VERL_CHECK(PyCallable_Check(function.ptr()) != 0, "reward", "'", name, "' in '", path,
               "' is not a function (custom_reward_function.name)");
    loaded->kwargs = reward_kwargs.is_object() ? json_to_python(reward_kwargs) : py::dict();
    // verl awaits a coroutine function (inspect.iscoroutinefunction) and runs anything else in a thread.
    loaded->is_async = py::module_::import("inspect").attr("iscoroutinefunction")(function).cast<bool>();
    loaded->function = function;
  });
  RewardFunction out;
  out.score = [loaded](const std::string& data_source, const std::string& solution_str,
                       const nlohmann::json& ground_truth, const nlohmann::json& extra_info) {
    const ScoreCall call{data_source, solution_str, ground_truth, extra_info};
    if (!loaded->is_async) return call_plain(*loaded, call);
    ScoreOutcome outcome = std::move(run_on_event_loop(*loaded, {call}, nullptr)[0]);
    if (!outcome.result) throw RewardFunctionError("reward", outcome.error);
    return *outcome.result;
  };
  out.score_batch = [loaded](const std::vector<ScoreCall>& calls, const config::RewardRateLimits* rate_limits) {
    return score_batch(*loaded, calls, rate_limits);
  };
  return out;
}

}  // namespace verl::reward
