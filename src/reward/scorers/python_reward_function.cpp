// custom_reward_function as a verl-style Python file, run unchanged in the embedded interpreter.
#include <memory>
#include <string>

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
};

ScoreResult call(const PythonFunction& f, const std::string& data_source, const std::string& solution_str,
                 const nlohmann::json& ground_truth, const nlohmann::json& extra_info) {
  return python::with_gil("reward", [&] {
    py::dict kwargs;
    kwargs["data_source"] = py::str(data_source);
    kwargs["solution_str"] = py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(solution_str.data(), static_cast<Py_ssize_t>(solution_str.size()), "replace"));
    kwargs["ground_truth"] = json_to_python(ground_truth);
    kwargs["extra_info"] = json_to_python(extra_info);
    py::object result;
    const std::string who = "reward function '" + f.name + "' from '" + f.path + "'";
    python::UserCallLimit limit(f.limits.timeout_s, who, f.limits.timeout_key);
    try {
      // verl's wrapped_fn: raw_fn(*args, **kwargs, **reward_kwargs); a repeated key is a TypeError.
      for (const auto& item : f.kwargs.cast<py::dict>()) {
        if (kwargs.contains(item.first)) {
          throw RewardFunctionError(
              "reward", "TypeError: got multiple values for keyword argument '" +
                            py::str(item.first).cast<std::string>() + "' (custom_reward_function.reward_kwargs)");
        }
        kwargs[item.first] = item.second;
      }
      result = f.function(**kwargs);
    } catch (py::error_already_set& error) {
      if (limit.expired()) throw RewardFunctionError("reward", limit.timeout_message());
      throw RewardFunctionError("reward", describe_user_error(error));
    }
    // Code that caught the TimeoutError and returned anyway still ran past the limit.
    if (limit.expired()) throw RewardFunctionError("reward", limit.timeout_message());
    try {
      if (py::isinstance<py::dict>(result)) {
        py::dict dict = result.cast<py::dict>();
        VERL_CHECK(dict.contains("score"), "reward", who, " returned a dict without a \"score\" key");
        py::object score = dict["score"];
        VERL_CHECK(is_number_like(score), "reward", who, " returned a dict whose \"score\" is ",
                   py::str(py::type::of(score).attr("__name__")).cast<std::string>(), ", expected a number");
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
      VERL_CHECK(is_number_like(result), "reward", who, " returned ",
                 py::str(py::type::of(result).attr("__name__")).cast<std::string>(),
                 "; expected a number (float, int, bool) or a dict with a \"score\" key");
      return ScoreResult::scalar(py::float_(result).cast<double>());
    } catch (py::error_already_set& error) {  // e.g. __float__ raising
      throw RewardFunctionError("reward", describe_user_error(error));
    }
  });
}

}  // namespace

ComputeScoreFn load_python_reward_function(const std::string& path, const std::string& name,
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
    loaded->function = function;
  });
  return [loaded](const std::string& data_source, const std::string& solution_str,
                  const nlohmann::json& ground_truth, const nlohmann::json& extra_info) {
    return call(*loaded, data_source, solution_str, ground_truth, extra_info);
  };
}

}  // namespace verl::reward
