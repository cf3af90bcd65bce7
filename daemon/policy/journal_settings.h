// The "journal" section of the configuration: whether the daemon writes one journal entry per
// crash, as systemd-coredump does (daemon/journal/). Plain settings.
#pragma once

namespace coredumpd {

/// "journal": {...}: the crash's journal entry (MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1).
struct JournalSettings {
  bool enabled = true;      ///< one entry per crash when journald runs (nothing otherwise)
  bool stack_trace = true;  ///< the analysis' stack trace in MESSAGE (waits for the analysis)
  int queue = 256;          ///< entries waiting to be sent; past it an entry is counted as failed
};

}  // namespace coredumpd
