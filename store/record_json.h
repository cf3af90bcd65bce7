// A DumpRecord as one self-contained JSON object, and back: the pending journal's lines and the
// query service's replies (store/query_protocol.h) carry records this way.
#pragma once

#include <nlohmann/json.hpp>

#include "store/dump_record.h"

namespace coredumpd {

/// `{"record": to_json(r), "rule": r.rule, "container_key": bytes or null}`: to_json() plus the
/// index columns it leaves to `extra`. Never throws for a valid record (bytes that are not UTF-8
/// travel as byte arrays, dump_record.h).
nlohmann::json record_envelope(const DumpRecord& r);

/// The inverse of record_envelope(), including signature, signature_text and analysis when
/// present. Throws std::invalid_argument or nlohmann::json::exception on a missing or mistyped
/// field (the input may come from a file or a socket: never trusted).
DumpRecord record_from_envelope(const nlohmann::json& envelope);

}  // namespace coredumpd
