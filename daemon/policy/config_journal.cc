// The table of the "journal" keys (config_keys.h).
#include "daemon/policy/config_keys.h"

namespace coredumpd {

namespace {

constexpr ConfigKey<JournalSettings> kJournal[] = {
    boolean_key<&JournalSettings::enabled>("enabled",
        "Write one journal entry per crash, with systemd-coredump's fields (MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1), "
        "when journald runs."),
    boolean_key<&JournalSettings::stack_trace>("stack_trace",
        "Put the analysis' stack trace in the entry's MESSAGE: the entry of a stored core waits for its analysis."),
    integer_key<&JournalSettings::queue>("queue", 1, 65536,
        "Entries waiting to be sent; an entry past it is dropped and counted (\"journal entries failed\")."),
};

}  // namespace

std::span<const ConfigKey<JournalSettings>> journal_keys() { return kJournal; }

}  // namespace coredumpd
