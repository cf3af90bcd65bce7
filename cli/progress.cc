#include "cli/progress.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>

namespace coredumpd::cli {

namespace {

std::atomic<bool> g_enabled{true};

void write_quietly(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;  // EINTR included: the next redraw tries again
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

void set_progress_enabled(bool enabled) { g_enabled = enabled; }

std::string progress_size(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < kUnits.size()) {
    v /= 1024.0;
    ++u;
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.1f %s", v, kUnits[u]);
  return buf.data();
}

ProgressLine::ProgressLine(int fd, std::uint64_t total, std::string label)
    : fd_(fd), total_(total), label_(std::move(label)), active_(g_enabled && ::isatty(fd) == 1) {
  start_ = last_ = std::chrono::steady_clock::now();
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(std::uint64_t done) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kMinRedraw) return;
  draw(done, now);
}

void ProgressLine::draw(std::uint64_t done, std::chrono::steady_clock::time_point now) {
  last_ = now;
  ++redraws_;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string line = label_ + "  " + progress_size(done);
  if (total_ > 0) {
    line += " / " + progress_size(total_);
    const auto pct = done >= total_ ? 100 : static_cast<unsigned>(done * 100 / total_);
    line += "  " + std::to_string(pct) + "%";
  }
  if (secs > 0) line += "  " + progress_size(static_cast<std::uint64_t>(static_cast<double>(done) / secs)) + "/s";
  const std::size_t width = line.size();
  if (width < drawn_width_) line.append(drawn_width_ - width, ' ');  // cover a longer previous line
  drawn_width_ = width;
  write_quietly(fd_, "\r" + line);
}

void ProgressLine::finish() {
  if (!active_) return;
  active_ = false;
  // "\r", then ESC[K (erase to the end of the line): the cursor is back where the line began.
  if (redraws_ > 0) write_quietly(fd_, "\r\x1b[K");
}

}  // namespace coredumpd::cli
