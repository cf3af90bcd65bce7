// Where a crash's journal entry goes: journald, through libsystemd's sd_journal_sendv(), or (in
// tests) anything else that takes the same fields.
#pragma once

#include <string>
#include <vector>

namespace coredumpd::journal {

/// What became of one entry.
enum class SendResult {
  Written,    ///< journald took it
  NoJournal,  ///< journald does not run here (its socket is absent): nothing was sent
  Failed,     ///< journald refused it, or it could not be sent; `error` says why
};

/// Takes finished entries ("NAME=value" fields, journal_fields.h). Called from one thread at a
/// time (the journal queue's worker).
class EntrySink {
 public:
  virtual ~EntrySink() = default;
  /// Sends one entry. On Failed, `error` is set to the reason (strerror text).
  virtual SendResult send(const std::vector<std::string>& fields, std::string& error) = 0;
};

/// journald's native socket: sd_journal_sendv() has libsystemd's fixed path, so this is the only
/// one it can reach (as systemd-coredump, the sender's credentials and the field names go with it).
inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";

/// journald, through sd_journal_sendv(). When kJournalSocket does not exist (no journald: a
/// container without systemd, a system without it) send() returns NoJournal without sending, so
/// that the daemon runs the same with or without journald; it looks again at each entry, so
/// a journald started later gets the next one.
class JournaldSink final : public EntrySink {
 public:
  SendResult send(const std::vector<std::string>& fields, std::string& error) override;
};

}  // namespace coredumpd::journal
