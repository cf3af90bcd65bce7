// ScopedEnv: sets or unsets environment variables for one test and puts the old values back.
#pragma once

#include <time.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coredumpd::test {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
    tzset();
  }
  /// Sets `name` to `value`, or unsets it when `value` is std::nullopt; tzset() follows (for TZ).
  ScopedEnv& set(const std::string& name, std::optional<std::string> value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
    tzset();
    return *this;
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace coredumpd::test
