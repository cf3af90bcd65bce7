// The human-readable part of `dumpctl info` built from a dump's free-form metadata
// (DumpRecord::extra): negotiated flags, timings, open files, locks, memory.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd::cli {

/// One "Label: value" line of `dumpctl info`; `value` is already safe to print (hostile bytes
/// escaped) and may span several lines ('\n'), which the caller indents under the label.
struct InfoField {
  std::string label;
  std::string value;
};

/// The label column of `dumpctl info`: coredumpctl 252's print_info() right-aligns its labels in
/// 14 columns ("           PID: ", "       Message: ").
inline constexpr std::size_t kInfoLabelWidth = 14;

/// Prints "   Label: value" (the label right-aligned in `label_width` columns, then ": "); further
/// lines of `value` (split at '\n') are indented under the value, as coredumpctl indents its
/// Message. `value` must already be safe to print (escaped).
void print_info_field(std::ostream& out, const std::string& label, const std::string& value,
                      std::size_t label_width = 15);

/// The fields describing `extra` (the JSON object the daemon stores with each dump; see
/// store/record_extras.h for its keys), in display order (the container and
/// rule are shown by cmd_info itself): Negotiation, Timing, Threads, Signal Info, Open Files, Locks, Memory, Collector
/// Errors, Environment, Vacuumed. Keys that are absent or of an unexpected type are skipped, never
/// an error (old records, hostile JSON). Open files are listed up to `max_fds` (the rest counted).
std::vector<InfoField> info_details(const nlohmann::json& extra, std::size_t max_fds = 32);

}  // namespace coredumpd::cli
