#include "cli/options.h"

#include <unistd.h>
#include <wordexp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "cli/format.h"
#include "cli/json_output.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// Whether any record matches `m` (a cheap scan: no extras, stops at the first).
bool any_with(DumpSource& source, FieldMatch m) {
  RecordQuery q;
  q.matches.push_back(std::move(m));
  q.with_extra = false;
  bool found = false;
  source.scan(q, [&](DumpRecord&&) {
    found = true;
    return false;
  });
  return found;
}

/// The full id of the one record whose id starts with `prefix` (lower-case hex), or "" when none
/// does. Throws DumpctlError when several do: a clearer answer than "No coredumps found." for a
/// prefix copied too short (coredumpctl, which has no ids, would read it as a COMM).
std::string unique_id_with_prefix(DumpSource& source, const std::string& prefix) {
  RecordQuery q;
  q.matches.push_back({"COREDUMPD_ID", prefix});
  q.with_extra = false;
  std::vector<std::string> ids;
  source.scan(q, [&](DumpRecord&& r) {
    ids.push_back(std::move(r.id));
    return ids.size() < 2;
  });
  if (ids.size() > 1)
    throw DumpctlError("id prefix '" + escape_for_display(prefix) + "' is ambiguous: it matches more than one coredump");
  return ids.empty() ? "" : ids.front();
}

std::string known_fields_text() {
  std::string out;
  for (const auto f : known_fields()) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

/// coredumpctl's path_make_absolute_cwd(): the working directory prefixed, nothing normalised.
std::string absolute(const std::string& path) {
  if (path.starts_with('/')) return path;
  const std::unique_ptr<char, decltype(&::free)> cwd(::getcwd(nullptr, 0), &::free);
  if (!cwd) throw DumpctlError("cannot make '" + escape_for_display(path) + "' absolute: no working directory");
  const std::string dir = cwd.get();
  return dir + (dir.ends_with('/') ? "" : "/") + path;
}

}  // namespace

JsonMode parse_json_mode(const std::string& value) {
  if (value == "short") return JsonMode::Short;
  if (value == "pretty") return JsonMode::Pretty;
  if (value == "off") return JsonMode::Off;
  throw DumpctlError("unknown --json= mode '" + escape_for_display(value) + "' (want short, pretty or off)");
}

void print_json_as(const nlohmann::json& j, const Io& io, JsonMode mode) {
  if (mode != JsonMode::Off) print_json(j, io, mode);
}

std::vector<FieldMatch> match_of(const std::string& m, DumpSource& source) {
  if (const std::size_t eq = m.find('='); eq != std::string::npos) {
    std::string field = m.substr(0, eq);
    if (!known_field(field))
      throw DumpctlError("unknown field '" + escape_for_display(field) + "' in match '" + escape_for_display(m) +
                         "'; known fields: " + known_fields_text());
    return {{std::move(field), m.substr(eq + 1)}};
  }
  if (m.find('/') != std::string::npos) {
    const std::string path = absolute(m);
    return {{"COREDUMP_EXE", path}, {"COREDUMP_EXE", path + " (deleted)"}};
  }
  const bool hex = !m.empty() && std::all_of(m.begin(), m.end(), is_hex_digit);
  if (!m.empty() && all_digits(m)) {
    FieldMatch pid{"COREDUMP_PID", m};
    if (any_with(source, pid)) return {pid};
    if (std::string id = unique_id_with_prefix(source, m); !id.empty()) return {{"COREDUMPD_ID", std::move(id)}};
    return {pid};
  }
  FieldMatch comm{"COREDUMP_COMM", m};
  if (hex && !any_with(source, comm))
    if (std::string id = unique_id_with_prefix(source, lower_hex(m)); !id.empty()) return {{"COREDUMPD_ID", std::move(id)}};
  return {comm};
}

RecordQuery query_of(const SelectOptions& o, DumpSource& source) {
  RecordQuery q;
  for (const auto& m : o.matches)
    for (auto& fm : match_of(m, source)) q.matches.push_back(std::move(fm));
  if (o.since) q.since_us = parse_time_option(*o.since, "--since");
  if (o.until) q.until_us = parse_time_option(*o.until, "--until");
  if (q.since_us && q.until_us && *q.since_us > *q.until_us) throw DumpctlError("--since= must be before --until=.");
  q.newest_first = o.reverse || o.newest_only;
  return q;
}

std::size_t for_each_selected(DumpSource& source, RecordQuery q, const SelectOptions& o,
                              const std::function<bool(const DumpRecord&)>& keep,
                              const std::function<void(DumpRecord&&)>& each) {
  const std::optional<std::size_t> rows = o.max_rows ? o.max_rows : o.newest_only ? std::optional<std::size_t>(1) : std::nullopt;
  // Newest first, the index can stop at the newest N itself; oldest first (coredumpctl's -n without
  // -r: the N oldest) or with a later filter, the stream is cut below.
  if (rows && q.newest_first && !keep) q.limit = rows;
  std::size_t n = 0;
  source.scan(q, [&](DumpRecord&& r) {
    if (keep && !keep(r)) return true;
    each(std::move(r));
    ++n;
    return !rows || n < *rows;
  });
  return n;
}

DumpRecord newest_selected(DumpSource& source, const SelectOptions& o, bool& more) {
  RecordQuery q = query_of(o, source);
  q.newest_first = true;
  q.limit = 2;
  std::vector<DumpRecord> found;
  source.scan(q, [&](DumpRecord&& r) {
    found.push_back(std::move(r));
    return found.size() < 2;
  });
  if (found.empty()) throw DumpctlError("No match found.");
  more = found.size() > 1;
  return std::move(found.front());
}

std::vector<std::string> split_debugger_arguments(const std::string& arguments) {
  wordexp_t we{};
  const int rc = ::wordexp(arguments.c_str(), &we, WRDE_NOCMD);
  if (rc != 0) {
    if (rc == WRDE_NOSPACE) ::wordfree(&we);
    const char* why = rc == WRDE_BADCHAR ? "a shell operator (| & ; < > ( ) { } or a newline) outside quotes"
                      : rc == WRDE_CMDSUB ? "command substitution, which is not run"
                      : rc == WRDE_SYNTAX ? "a syntax error (an unbalanced quote?)"
                                          : "out of memory";
    throw DumpctlError("cannot split --debugger-arguments '" + escape_for_display(arguments) + "': " + why);
  }
  std::vector<std::string> out(we.we_wordv, we.we_wordv + we.we_wordc);
  ::wordfree(&we);
  return out;
}

std::string debugger_of(const std::optional<std::string>& option) {
  if (option) return *option;
  const char* env = std::getenv("SYSTEMD_DEBUGGER");
  return env != nullptr && env[0] != '\0' ? env : "gdb";
}

}  // namespace coredumpd::cli
