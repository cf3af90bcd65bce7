#include "daemon/journal/journal_writer.h"

#include <sys/stat.h>
#include <sys/uio.h>

#include <cstring>

#include <systemd/sd-journal.h>

namespace coredumpd::journal {

SendResult JournaldSink::send(const std::vector<std::string>& fields, std::string& error) {
  struct stat st {};
  if (::stat(kJournalSocket, &st) != 0 || !S_ISSOCK(st.st_mode)) return SendResult::NoJournal;
  std::vector<iovec> iov;
  iov.reserve(fields.size());
  for (const auto& f : fields) iov.push_back({const_cast<char*>(f.data()), f.size()});
  // Values may hold newlines and any byte: sd_journal_sendv() sends such a field in journald's
  // binary form (name, '\n', 64-bit length, data), and an entry too big for one datagram in a
  // sealed memfd.
  const int r = ::sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
  if (r >= 0) return SendResult::Written;
  error = std::strerror(-r);
  return SendResult::Failed;
}

}  // namespace coredumpd::journal
