// The tables of the policy keys ("defaults" and each rule), of "rate_limit", of a rule's own keys
// and of its "match" conditions (config_keys.h); and the parsing of "rules".
#include <pwd.h>

#include <algorithm>
#include <climits>

#include "daemon/policy/config_keys.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr std::string_view kActions[] = {"store", "reject", "metadata-only", "forward"};
constexpr std::string_view kUploadModes[] = {"none", "metadata", "core", "core-if-new-signature"};
constexpr std::string_view kOverSize[] = {"truncate", "reject"};
constexpr std::string_view kNamespaces[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};


std::uint64_t memory_types_of(const KeyValue& v) {
  if (v.value.is_number_integer()) return static_cast<std::uint64_t>(v.integer(0, 0x1FF));
  if (!v.value.is_array()) v.fail("expected a list of memory type names or an integer bit mask");
  std::uint64_t bits = 0;
  for (const auto& item : v.value) {
    const auto name = KeyValue{v.origin, v.key, item}.string();
    const auto& types = memory_type_names();
    const auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return name == t.first; });
    if (it == types.end()) v.fail("unknown memory type \"" + name + "\"");
    bits |= it->second;
  }
  return bits;
}

json memory_types_to_json(std::uint64_t bits) {
  json names = json::array();
  std::uint64_t known = 0;
  for (const auto& [name, bit] : memory_type_names()) {
    known |= bit;
    if (bits & bit) names.push_back(name);
  }
  return (bits & ~known) ? json(bits) : names;  // unknown bits cannot be named: the mask
}

// {"burst": N, "interval_s": W}; both keys required.
RateLimit rate_limit_of(const KeyValue& v) {
  RateLimit r;
  apply_keys(rate_limit_keys(), v, r,
             {.not_object = "expected {\"burst\": N, \"interval_s\": SECONDS} or null",
              .unknown_key = unknown_key_naming(rate_limit_keys())});
  for (const auto& k : rate_limit_keys())
    if (!v.value.contains(k.name)) v.child(std::string(k.name), v.value).fail("missing");
  return r;
}

constexpr ConfigKey<Policy> kPolicy[] = {
    {.name = "action", .type = "string", .choices = kActions,
     .description = "store the core; metadata-only (a record, no core); reject (no dump, a record why); forward it.",
     .apply = [](const KeyValue& v, Policy& p) { p.action = *action_from_name(v.choice()); },
     .write = [](const Policy& p) -> json { return action_name(p.action); }},
    {.name = "forward_socket", .type = "path", .values = "absolute, no \"..\"",
     .description = "For forward: the receiver's socket, inside the crashing process's root; no symlink followed.",
     .apply = [](const KeyValue& v, Policy& p) {
       p.forward_socket = v.path();
       if (p.forward_socket.find("/../") != std::string::npos || p.forward_socket.ends_with("/.."))
         v.fail("must not contain a \"..\" component");
     },
     .write = [](const Policy& p) -> json { return p.forward_socket; }},
    boolean_key<&Policy::close_files>("close_files", "Ask for COREDUMP_CLOSE_FILES when the kernel offers it."),
    boolean_key<&Policy::records>("records", "Ask for COREDUMP_RECORDS when the kernel offers it."),
    boolean_key<&Policy::sparse>("sparse", "Ask for COREDUMP_SPARSE when the kernel offers it."),
    {.name = "memory_types", .type = "list of names, bit mask, or null", .values = "anon_private ... dax_shared; 0..0x1FF",
     .description = "Memory in the core (COREDUMP_MEMORY_*); null: the task's coredump_filter. Needs a NEXT kernel.",
     .apply = [](const KeyValue& v, Policy& p) {
       if (v.value.is_null()) p.memory_types.reset();
       else p.memory_types = memory_types_of(v);
     },
     .write = [](const Policy& p) { return p.memory_types ? memory_types_to_json(*p.memory_types) : json(nullptr); }},
    {.name = "post_dump", .type = "list of names", .values = "smaps_rollup",
     .description = "Collectors run after the core while the task is parked (WAIT); [] = no WAIT.",
     .apply = [](const KeyValue& v, Policy& p) {
       if (!v.value.is_array()) v.fail("expected a list of post-dump collector names");
       p.post_dump.clear();
       for (const auto& item : v.value) {
         const auto name = KeyValue{v.origin, v.key, item}.string();
         if (name != "smaps_rollup") v.fail("unknown post-dump collector \"" + name + "\" (known: smaps_rollup)");
         p.post_dump.push_back(name);
       }
     },
     .write = [](const Policy& p) -> json { return p.post_dump; }},
    boolean_key<&Policy::honor_rlimit_core>("honor_rlimit_core",
        "Reject the dump of a task whose RLIMIT_CORE is below one page (the kernel ignores it for sockets; "
        "off as in Debian's systemd-coredump, which is passed 2^63 for %c)."),
    boolean_key<&Policy::capture_environ>("capture_environ", "Store /proc/<pid>/environ (it often holds secrets)."),
    boolean_key<&Policy::capture_thread_names>("capture_thread_names",
        "Store every thread's name (/proc/<pid>/task/*/comm, read before the ack, at most 4096) in "
        "extra.thread_names, for the stack traces."),
    integer_key<&Policy::compression_level>("compression_level", 1, 19, "zstd level of the stored core."),
    {.name = "max_core_bytes", .type = "integer or null", .min = 4096, .max = INT64_MAX, .values = ">= 4096",
     .description = "Largest core stored, bytes (over_size decides what happens beyond); null: unlimited. Default "
                    "32 GiB, systemd-coredump's ProcessSizeMax=.",
     .apply = [](const KeyValue& v, Policy& p) {
       if (v.value.is_null()) p.max_core_bytes.reset();
       else p.max_core_bytes = static_cast<std::uint64_t>(v.integer());
     },
     .write = [](const Policy& p) { return optional_json(p.max_core_bytes); }},
    {.name = "over_size", .type = "string", .choices = kOverSize,
     .description = "A core over max_core_bytes: keep its first bytes flagged truncated, or store none.",
     .apply = [](const KeyValue& v, Policy& p) { p.truncate_over_size = v.choice() == "truncate"; },
     .write = [](const Policy& p) -> json { return p.truncate_over_size ? "truncate" : "reject"; }},
    {.name = "rate_limit", .type = "object or null",
     .description = "At most burst cores per interval_s for each (rule, container, executable): see rate_limit.",
     .apply = [](const KeyValue& v, Policy& p) {
       if (v.value.is_null()) p.rate_limit.reset();
       else p.rate_limit = rate_limit_of(v);
     },
     .write = [](const Policy& p) {
       return p.rate_limit ? keys_to_json(rate_limit_keys(), *p.rate_limit) : json(nullptr);
     }},
    {.name = "max_use", .type = "size or null",
     .description = "Quota of the cores this rule stored (in defaults: of dumps no rule matched; not inherited).",
     .apply = [](const KeyValue& v, Policy& p) {
       if (v.value.is_null()) p.max_use.reset();
       else p.max_use = v.size();
     },
     .write = [](const Policy& p) { return optional_json(p.max_use); }},
    {.name = "upload", .type = "string", .choices = kUploadModes,
     .description = "What is uploaded when upload.endpoint is set: nothing; the record; the record and the core; "
                    "the core only for a signature no host has uploaded a core of.",
     .apply = [](const KeyValue& v, Policy& p) {
       const std::string m = v.choice();
       p.upload = m == "none" ? UploadMode::None : m == "metadata" ? UploadMode::Metadata
                : m == "core" ? UploadMode::Core : UploadMode::CoreIfNewSignature;
     },
     .write = [](const Policy& p) -> json { return upload_mode_name(p.upload); }},
};

constexpr ConfigKey<RateLimit> kRateLimit[] = {
    integer_key<&RateLimit::burst>("burst", 1, 1'000'000, "Cores stored per window (required)."),
    integer_key<&RateLimit::interval>("interval_s", 1, 7 * 24 * 3600, "The sliding window (required)."),
};

constexpr ConfigKey<Rule> kRule[] = {
    {.name = "name", .type = "string", .values = "required",
     .description = "Names the rule in records, quotas and rate limits; rules of one name share one quota.",
     .apply = [](const KeyValue& v, Rule& r) { r.name = v.string(); },
     .write = [](const Rule& r) -> json { return r.name; }},
    {.name = "match", .type = "object", .values = "required",
     .description = "Conditions, all of which must hold: see the match keys. Any policy key may follow.",
     .apply = [](const KeyValue& v, Rule& r) {
       r.match = Match{};
       apply_keys(match_keys(), v, r.match,
                  {.not_object = "expected an object of conditions", .unknown_key = "unknown match condition"});
     },
     .write = [](const Rule& r) { return match_to_json(r.match); }},
};

// A condition is written back only when set.
json set_or_discarded(const auto& v) { return v ? json(*v) : json(json::value_t::discarded); }

// A text condition (a std::optional<std::string> field `M` of Match).
template <auto M>
constexpr ConfigKey<Match> text_condition(std::string_view name, std::string_view type, std::string_view description,
                                          std::string_view values = {}) {
  return {.name = name, .type = type, .values = values, .description = description,
          .apply = [](const KeyValue& v, Match& m) { m.*M = v.string(); },
          .write = [](const Match& m) { return set_or_discarded(m.*M); }};
}

constexpr ConfigKey<Match> kMatch[] = {
    text_condition<&Match::comm>("comm", "string", "The comm, exactly."),
    text_condition<&Match::exe>("exe", "glob", "fnmatch(3) glob on the executable's path."),
    text_condition<&Match::cgroup>("cgroup", "glob", "Glob on the path of any line of /proc/<pid>/cgroup."),
    {.name = "uid", .type = "integer", .min = 0, .max = UINT32_MAX, .description = "The real uid.",
     .apply = [](const KeyValue& v, Match& m) { m.uid = v.integer(); },
     .write = [](const Match& m) { return set_or_discarded(m.uid); }},
    {.name = "user", .type = "string", .values = "a user name",
     .description = "The real uid of this user, resolved when the file is read (written back as uid).",
     .apply = [](const KeyValue& v, Match& m) {
       const auto name = v.string();
       const passwd* pw = ::getpwnam(name.c_str());
       if (!pw) v.fail("no such user \"" + name + "\"");
       m.uid = pw->pw_uid;
     }},
    text_condition<&Match::runtime>("runtime", "string",
        "The container runtime recognised from the cgroup path (a record's container.runtime).",
        "\"docker\", \"podman\", \"systemd-nspawn\", ..., \"host\""),
    text_condition<&Match::container>("container", "string",
        "The container: its key (\"docker:<id>\"), its name, or its id (or a prefix of >= 12 chars)."),
    text_condition<&Match::unit>("unit", "glob", "Glob on the systemd unit (\"nginx.service\")."),
    text_condition<&Match::slice>("slice", "glob", "Glob on the systemd slice (\"machine.slice\")."),
    {.name = "namespaces", .type = "object", .choices = kNamespaces,
     .values = "{\"<ns>\": \"host\" | \"non-host\" | <inode>}; ns: cgroup ipc mnt net pid time user uts",
     .description = "Whether each named namespace is the host's, not the host's, or this inode.",
     .apply = [](const KeyValue& v, Match& m) {
       if (!v.value.is_object()) v.fail("expected an object like {\"pid\": \"non-host\"}");
       for (const auto& [ns, want] : v.value.items()) {
         const KeyValue w = v.child(ns, want);
         if (std::find(v.choices.begin(), v.choices.end(), ns) == v.choices.end()) w.fail("unknown namespace");
         NamespaceMatch nm;
         if (want.is_number_unsigned()) {
           nm.kind = NamespaceMatch::Kind::Inode;
           nm.inode = want.get<std::uint64_t>();
         } else {
           const auto s = w.string();
           if (s == "host") nm.kind = NamespaceMatch::Kind::Host;
           else if (s == "non-host") nm.kind = NamespaceMatch::Kind::NonHost;
           else w.fail("expected \"host\", \"non-host\" or an inode number");
         }
         m.namespaces[ns] = nm;
       }
     },
     .write = [](const Match& m) {
       if (m.namespaces.empty()) return json(json::value_t::discarded);
       json ns = json::object();
       for (const auto& [name, want] : m.namespaces) {
         if (want.kind == NamespaceMatch::Kind::Inode) ns[name] = want.inode;
         else ns[name] = want.kind == NamespaceMatch::Kind::Host ? "host" : "non-host";
       }
       return ns;
     }},
};

}  // namespace

std::span<const ConfigKey<Policy>> policy_keys() { return kPolicy; }
std::span<const ConfigKey<RateLimit>> rate_limit_keys() { return kRateLimit; }
std::span<const ConfigKey<Rule>> rule_keys() { return kRule; }
std::span<const ConfigKey<Match>> match_keys() { return kMatch; }

void apply_policy(const KeyValue& obj, Policy& p, std::span<const std::string_view> skip) {
  apply_keys(policy_keys(), obj, p, {}, skip);
}

json match_to_json(const Match& m) { return keys_to_json(match_keys(), m); }

void apply_rules(const KeyValue& rules, Config& c) {
  static constexpr std::string_view kMissing[] = {
      "missing: every rule needs a name",
      "missing: a rule without conditions would match everything; use \"defaults\""};
  static_assert(std::size(kMissing) == std::size(kRule));
  std::vector<std::string_view> own;  // the rule's own keys, not policy keys
  for (const auto& k : rule_keys()) own.push_back(k.name);
  c.rules.clear();
  for (std::size_t i = 0; i < rules.value.size(); ++i) {
    const KeyValue r{rules.origin, "rules[" + std::to_string(i) + "]", rules.value[i]};
    if (!r.value.is_object()) r.fail("expected an object");
    Rule rule;
    rule.policy = c.defaults;
    rule.policy.max_use.reset();  // the defaults' quota is the no-rule group's, not every rule's
    // The rule's own keys first, in table order: each must be present.
    for (std::size_t k = 0; k < rule_keys().size(); ++k) {
      const auto& key = rule_keys()[k];
      const auto it = r.value.find(std::string(key.name));
      if (it == r.value.end()) r.child(std::string(key.name), r.value).fail(std::string(kMissing[k]));
      key.apply(key_value(r, key, *it), rule);
    }
    apply_policy(r, rule.policy, own);
    c.rules.push_back(std::move(rule));
  }
}

}  // namespace coredumpd
