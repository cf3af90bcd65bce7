#include "daemon/proc/thread_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "store/dump_record.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

// A comm is at most TASK_COMM_LEN (16) bytes with its NUL; the kernel prints it raw (no escaping,
// unlike status's Name:) and adds '\n'. A little room beyond that costs nothing.
constexpr std::size_t kCommMax = 64;

enum class Read { Ok, Gone, Failed };

// task/<tid>/comm under `proc`, its one trailing '\n' dropped. Gone: the thread exited meanwhile.
Read read_comm(const ProcDir& proc, std::int64_t tid, std::string& out, std::string& error) {
  const std::string name = "task/" + std::to_string(tid) + "/comm";
  UniqueFd fd(::openat(proc.dirfd(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  ssize_t n = -1;
  char buf[kCommMax];
  if (fd) {
    do n = ::read(fd.get(), buf, sizeof(buf));
    while (n < 0 && errno == EINTR);
  }
  if (n < 0) {
    if (errno == ENOENT || errno == ESRCH) return Read::Gone;
    error = name + ": " + std::strerror(errno);
    return Read::Failed;
  }
  out.assign(buf, static_cast<std::size_t>(n));
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return Read::Ok;
}

}  // namespace

ThreadNames read_thread_names(const ProcDir& proc, std::span<const ThreadIds> threads, std::size_t cap,
                              std::chrono::steady_clock::time_point stop_at, std::optional<std::size_t> total) {
  ThreadNames r;
  std::size_t read = 0, tried = 0, failed = 0;
  std::string reason, name, error;
  for (const auto& t : threads) {
    if (read >= cap) {
      reason = "more than " + std::to_string(cap) + " threads";
      break;
    }
    if (std::chrono::steady_clock::now() >= stop_at) {
      reason = "time budget: stopped after " + std::to_string(read) + " names";
      break;
    }
    ++tried;
    switch (read_comm(proc, t.host_tid, name, error)) {
      case Read::Ok:
        r.names[std::to_string(t.ns_tid)] = bytes_to_json(name);
        ++read;
        break;
      case Read::Gone:
        break;
      case Read::Failed:
        if (r.error.empty()) r.error = error;
        ++failed;
        break;
    }
  }
  const std::size_t all = std::max(total.value_or(0), threads.size());
  const std::size_t omitted = all - tried + failed;
  if (omitted > 0) {
    if (reason.empty()) reason = tried < all ? "more than " + std::to_string(threads.size()) + " threads listed" : r.error;
    r.incomplete = {{"read", read}, {"omitted", omitted}, {"reason", reason}};
  }
  return r;
}

std::optional<std::size_t> parse_status_threads(const std::string& status) {
  const auto pos = status.find("\nThreads:");
  if (pos == std::string::npos) return std::nullopt;
  const char* p = status.c_str() + pos + 9;
  char* end = nullptr;
  const auto n = std::strtoull(p, &end, 10);
  if (end == p) return std::nullopt;
  return static_cast<std::size_t>(n);
}

}  // namespace coredumpd
