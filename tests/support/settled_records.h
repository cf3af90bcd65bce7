// The index's records once a test's crashes have all been recorded (header-only: the tests that
// use it link coredumpd_store; test_support does not).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "store/index.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {

/// Every record of the store at `store` once there are at least `n` and none is InProgress, waiting
/// at most `timeout`; after that, whatever the index held last (empty if it never opened).
inline std::vector<DumpRecord> settled_records(const std::string& store, std::size_t n,
                                               std::chrono::milliseconds timeout) {
  std::vector<DumpRecord> all;
  wait_until(
      [&] {
        try {
          all = Index(store, false).list();
        } catch (const IndexError&) {
          return false;
        }
        return all.size() >= n && std::none_of(all.begin(), all.end(), [](const DumpRecord& r) {
                 return r.state == DumpState::InProgress;
               });
      },
      timeout);
  return all;
}

}  // namespace coredumpd::test
