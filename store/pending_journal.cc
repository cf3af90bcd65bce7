#include "store/pending_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "store/fallback_core.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "store/record_json.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr const char* kFileName = "records.jsonl";

// One line of the journal, with its newline.
std::string journal_line(const DumpRecord& r, const std::string& why, std::int64_t journaled_us) {
  json line = record_envelope(r);
  line["journaled_us"] = journaled_us;
  line["why"] = why;
  return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

std::string pending_journal_path(const std::string& dir) {
  return (std::filesystem::path(dir) / kFileName).string();
}

PendingContents read_pending_journal(const std::string& dir) {
  PendingContents out;
  const std::string path = pending_journal_path(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return out;
    throw_errno("reading " + path);
  }
  std::map<std::string, std::size_t> by_id;  // id -> index in out.entries
  std::string text;
  for (std::size_t n = 1; std::getline(in, text); ++n) {
    if (text.empty()) continue;
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !line.is_object()) {
      out.skipped.push_back("line " + std::to_string(n) + ": not a JSON object (a torn write?)");
      continue;
    }
    try {
      PendingEntry e{record_from_envelope(line), line.value("why", std::string()), line.value("journaled_us", std::int64_t{0})};
      const auto [it, fresh] = by_id.try_emplace(e.record.id, out.entries.size());
      if (fresh) out.entries.push_back(std::move(e));
      else out.entries[it->second] = std::move(e);  // a later line of the same dump supersedes
    } catch (const std::exception& e) {
      out.skipped.push_back("line " + std::to_string(n) + ": " + e.what());
    }
  }
  if (in.bad()) throw_errno("reading " + path);
  return out;
}

PendingJournal::PendingJournal(std::string dir, std::uint64_t max_bytes)
    : dir_(std::move(dir)), path_(pending_journal_path(dir_)), max_bytes_(max_bytes) {
  struct stat st{};
  has_entries_ = ::stat(path_.c_str(), &st) == 0 && st.st_size > 0;
}

std::string PendingJournal::append(const DumpRecord& r, const std::string& why) {
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string text = journal_line(r, why, now_us);

  std::lock_guard lock(mu_);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);  // 0777 & ~umask; tightened below when new
  if (ec) return "pending journal " + dir_ + ": " + ec.message();
  ::chmod(dir_.c_str(), 0750);
  const UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) return "pending journal " + path_ + ": " + std::strerror(errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) < 0) return "pending journal " + path_ + ": " + std::strerror(errno);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size + text.size() > max_bytes_)
    return "pending journal " + path_ + " is full (" + std::to_string(size) + " bytes, limit " +
           std::to_string(max_bytes_) + ")";
  // Set before the line can be seen: a replay checks this without the lock, and one that sees
  // it waits for the lock, so it never misses a line a reader of the file already saw.
  has_entries_ = true;
  // One write: O_APPEND puts it whole at the end; a short write (ENOSPC) leaves a torn line the
  // reader skips, so it is cut off again.
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    const int err = n < 0 ? errno : ENOSPC;
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) < 0) { /* the reader skips the torn line */ }
    return "pending journal " + path_ + ": " + std::strerror(err);
  }
  if (::fsync(fd.get()) < 0) return "pending journal " + path_ + ": fsync: " + std::strerror(errno);
  return {};
}

ReplayResult PendingJournal::replay_into(Index& index, std::int64_t now_us, const std::string& interrupted_reason) {
  std::lock_guard lock(mu_);
  ReplayResult result;
  PendingContents contents = read_pending_journal(dir_);
  result.skipped = std::move(contents.skipped);
  std::vector<PendingEntry> keep;
  for (auto& e : contents.entries) {
    DumpRecord& r = e.record;
    const DumpState state = r.state;
    const std::string reason = r.reason;
    if (!interrupted_reason.empty() && r.state == DumpState::InProgress) {
      r.state = DumpState::Interrupted;
      r.reason = interrupted_reason;
    }
    // Its core still waits in the fallback (store/fallback_core.h): the record follows the core.
    if (core_in_fallback(r)) {
      keep.push_back(std::move(e));
      continue;
    }
    r.extra[extras::kJournaled] = {{"reason", e.why}, {"journaled_us", e.journaled_us}, {"moved_us", now_us}};
    try {
      if (index.get(r.id)) index.update(r);
      else index.insert(r);
      ++result.moved;
    } catch (const std::exception& ex) {
      result.errors.push_back(r.id + ": " + ex.what());
      r.extra.erase(extras::kJournaled);
      r.state = state;
      r.reason = reason;
      keep.push_back(std::move(e));
    }
  }
  result.left = static_cast<int>(keep.size());
  rewrite(keep);
  return result;
}

void PendingJournal::rewrite(const std::vector<PendingEntry>& keep) {
  if (keep.empty()) {
    if (::unlink(path_.c_str()) < 0 && errno != ENOENT) throw_errno("removing " + path_);
    has_entries_ = false;
    return;
  }
  // The rest, into a new file renamed over the old: a crash leaves one or the other whole.
  const std::string tmp = path_ + ".tmp";
  {
    const UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640));
    if (!fd) throw_errno("creating " + tmp);
    for (const auto& e : keep) {
      const std::string text = journal_line(e.record, e.why, e.journaled_us);
      if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno("writing " + tmp);
    }
    if (::fsync(fd.get()) < 0) throw_errno("fsync " + tmp);
  }
  if (::rename(tmp.c_str(), path_.c_str()) < 0) throw_errno("renaming " + tmp);
  has_entries_ = true;
}

}  // namespace coredumpd
