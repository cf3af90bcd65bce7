#include "daemon/report/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

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

std::string escape_for_log(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    // Length of a well-formed UTF-8 sequence starting here (0 if malformed); ASCII handled below.
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (c >= 0x80 && len > 0 && i + len <= s.size()) {
      bool ok = true;
      for (std::size_t k = 1; k < len; ++k) ok = ok && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      if (c == 0xE0 && c1 < 0xA0) ok = false;                 // overlong
      if (c == 0xED && c1 >= 0xA0) ok = false;                // surrogate
      if (c == 0xF0 && c1 < 0x90) ok = false;                 // overlong
      if (c == 0xF4 && c1 >= 0x90) ok = false;                // > U+10FFFF
      if (ok) {
        out.append(s, i, len);
        i += len;
        continue;
      }
    }
    char buf[5];
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c >= 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

}  // namespace coredumpd
