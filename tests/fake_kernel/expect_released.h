// The one assertion every fake-kernel dump test makes about the task's release (issue 21): the
// dump went out and the server then let the task go, the way a conforming server does it.
#pragma once

#include <gtest/gtest.h>

#include "tests/fake_kernel/fake_kernel.h"
#include "tests/fake_kernel/result_json.h"

namespace coredumpd::fake_kernel {

/// Whether `r` is a finished dump whose task was released: outcome Dumped, the whole core sent
/// (KERNEL mode), and, if WAIT was acked, the WAIT read ended by the server's clean hangup (EOF):
/// not by the deadline (outcome NotReleased), a reset, stray data or a socket error. Use as
/// `ASSERT_TRUE(task_released(res))`; a failure prints the whole result as JSON.
inline ::testing::AssertionResult task_released(const Result& r) {
  auto failed = [&r](const std::string& why) {
    return ::testing::AssertionFailure() << "task not released cleanly: " << why << "; result "
                                         << result_to_json(r).dump();
  };
  if (r.outcome != Outcome::Dumped)
    return failed("outcome " + std::string(outcome_name(r.outcome)) + " (" + r.error + ")");
  if (r.mode == protocol::Mode::Kernel && !r.stream_complete) return failed("the stream was not complete");
  if (r.wait_acked && r.wait_end != WaitEnd::Eof)
    return failed("the WAIT read ended by " + std::string(wait_end_name(r.wait_end)) + ", not EOF");
  return ::testing::AssertionSuccess();
}

}  // namespace coredumpd::fake_kernel
