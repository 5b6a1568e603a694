#include "verl/common/error.h"

namespace verl {

namespace {
std::string format_error(const std::string& component, const std::string& message, const std::string& where) {
  std::string text = component.empty() ? message : "[" + component + "] " + message;
  if (!where.empty()) text += " (at " + where + ")";
  return text;
}
}  // namespace

Error::Error(std::string component, const std::string& message, std::string where)
    : std::runtime_error(format_error(component, message, where)),
      component_(std::move(component)),
      message_(message),
      where_(std::move(where)) {}

}  // namespace verl
