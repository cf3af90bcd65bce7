// Real kernel: hostile clients of the query service cannot stall crash handling. While 200
// connections sit on the query socket without a request and slow readers hold big "list" replies
// unread, a real crash is stored and its task released as promptly as without them, and a fresh
// client is still answered.
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/real_kernel_fixture.h"
#include "tests/integration/query_client.h"

using namespace coredumpd;
using namespace coredumpd::test;
using namespace std::chrono_literals;

namespace {

TEST_F(RealKernel, QueryFloodDoesNotStallACrash) {
  const std::string query = *dir_ / "query.socket";
  restart_daemon("", {"--query-socket", query});
  // A few crashes first, so that "list" has something to hold unread.
  for (int i = 0; i < 3; ++i) {
    pid_t pid = 0;
    ASSERT_TRUE(crash({"--mode", "segv"}, &pid).exited);
    ASSERT_TRUE(stored_dump_of(pid));
  }

  std::vector<UniqueFd> flood;
  for (int i = 0; i < 200; ++i)
    if (UniqueFd c = connect_query(query)) flood.push_back(std::move(c));
  ASSERT_GE(flood.size(), 100u);
  // Slow readers: ask for the list and never read it (the first 8 were accepted; others got busy).
  for (std::size_t i = 0; i < flood.size(); i += 25) {
    const std::string req = "{\"op\":\"list\"}\n";
    (void)::send(flood[i].get(), req.data(), req.size(), MSG_NOSIGNAL);
  }

  pid_t pid = 0;
  const auto st = crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(st.exited) << "crasher hung (SIGKILLed) while the query socket was flooded";
  EXPECT_EQ(st.term_signal(), SIGSEGV);
  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec) << "no dump indexed for pid " << pid << "; log:\n" << daemon_->log();
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);

  // The flood hangs up; a new client is served once the daemon has seen the hang-ups (it counts
  // this uid's connections until then, and says "busy": retried, bounded).
  flood.clear();
  nlohmann::json reply;
  for (const auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    UniqueFd c = connect_query(query);
    ASSERT_TRUE(c);
    reply = ask(c.get(), "{\"op\":\"status\"}\n", nullptr, 10s);
    if (reply.value("code", "") != "busy") break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
}

}  // namespace
