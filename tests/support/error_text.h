// Test helper: the message of the verl::Error a call throws ("" when it returns), for tests that check the
// one-line errors.
#pragma once

#include <functional>
#include <string>

#include "verl/common/error.h"

namespace verl::test {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace verl::test
