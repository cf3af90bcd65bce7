#include "daemon/report/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

#include "util/text.h"

namespace coredumpd {

namespace {

// $JOURNAL_STREAM is "<dev>:<ino>" of the journal stream systemd connected to our stderr.
bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st{};
  return ::fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

}  // namespace

void setup_logging(const std::string& level) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") throw std::invalid_argument("unknown log level \"" + level + "\"");
  std::shared_ptr<spdlog::logger> logger;
  if (stderr_is_journal()) {
    logger = std::make_shared<spdlog::logger>("coredumpd", std::make_shared<spdlog::sinks::systemd_sink_mt>("coredumpd"));
  } else {
    logger = std::make_shared<spdlog::logger>("coredumpd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

std::string escape_for_log(const std::string& s) { return escape_for_display(s); }

}  // namespace coredumpd
