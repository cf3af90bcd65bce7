// A progress line for long copies of a core (`dump -o FILE`, `export`) on a terminal: bytes done
// of the total, percent and rate, redrawn in place with '\r' and cleared at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace coredumpd::cli {

/// Turns every progress line off (dumpctl's -q/--quiet calls it with false). On by default; a
/// line is still drawn only when its descriptor is a terminal.
void set_progress_enabled(bool enabled);

/// One progress line on `fd` (standard error), drawn only when progress is enabled and `fd` is a
/// terminal (isatty): nothing at all otherwise, so pipes and logs never see '\r'. Redraws at most
/// every kMinRedraw (a terminal gets no more than ~10 lines a second however small the chunks),
/// writing "LABEL  12.0 MiB / 100.0 MiB  12%  45.6 MiB/s" padded over the previous text. finish()
/// (or the destructor) clears the line so that later messages start on a clean one. Write errors
/// on `fd` are ignored: a progress line is never worth failing the copy.
class ProgressLine {
 public:
  /// Redraw interval: 10 redraws a second at most.
  static constexpr std::chrono::milliseconds kMinRedraw{100};

  /// `total` in bytes (0: unknown, then no percentage); `label` starts the line (raw text: the
  /// caller escapes what it got from a record).
  ProgressLine(int fd, std::uint64_t total, std::string label);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// `done` bytes so far; redraws if the last redraw is kMinRedraw old (the first one waits that
  /// long too: a copy that ends quickly draws nothing).
  void update(std::uint64_t done);
  /// Clears the line (if one was drawn); later updates draw nothing.
  void finish();
  /// True when this line draws at all (enabled and a terminal).
  bool active() const { return active_; }
  /// Redraws so far (for tests).
  unsigned redraws() const { return redraws_; }

 private:
  void draw(std::uint64_t done, std::chrono::steady_clock::time_point now);

  int fd_;
  std::uint64_t total_;
  std::string label_;
  bool active_ = false;
  unsigned redraws_ = 0;
  std::size_t drawn_width_ = 0;  ///< characters of the last line drawn, to pad over and to clear
  std::chrono::steady_clock::time_point start_, last_;
};

/// "12.3 MiB" style: B, KiB, MiB, GiB, TiB with one decimal above bytes.
std::string progress_size(std::uint64_t bytes);

}  // namespace coredumpd::cli
