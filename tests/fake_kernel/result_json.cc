#include "tests/fake_kernel/result_json.h"

#include "protocol/marker.h"

namespace coredumpd::fake_kernel {

namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json marker_json(std::optional<std::uint32_t> raw) {
  if (!raw) return nullptr;
  return {{"value", *raw}, {"name", protocol::interpret_marker(*raw).name}};
}

}  // namespace

std::string to_hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = std::to_integer<unsigned>(b);
    s.push_back(kDigits[v >> 4]);
    s.push_back(kDigits[v & 0xF]);
  }
  return s;
}

nlohmann::json result_to_json(const Result& r) {
  nlohmann::json ack = nullptr;
  if (r.ack) {
    ack = {{"size", r.ack->size},
           {"spare", r.ack->spare},
           {"mask", r.ack->mask},
           {"memory_types", r.ack->memory_types}};
  }
  const Timeline& t = r.timeline;
  return {
      {"outcome", outcome_name(r.outcome)},
      {"error", r.error},
      {"connected", r.connected},
      {"connect_errno", r.connect_errno},
      {"request_sent", r.request_sent},
      {"request", to_hex(r.request)},
      {"ack_raw", to_hex(r.ack_raw)},
      {"ack_consumed", r.ack_consumed},
      {"ack_size_field", opt(r.ack_size_field)},
      {"ack", ack},
      {"verdict", marker_json(r.verdict ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(*r.verdict))
                                        : std::nullopt)},
      {"marker_sent", r.marker_sent},
      {"marker", marker_json(r.marker)},
      {"mode", r.mode ? nlohmann::json(protocol::mode_name(*r.mode)) : nlohmann::json(nullptr)},
      {"wait_acked", r.wait_acked},
      {"records_acked", r.records_acked},
      {"sparse_acked", r.sparse_acked},
      {"memory_types_acked", r.memory_types_acked},
      {"close_files_acked", r.close_files_acked},
      {"effective_memory_types", r.effective_memory_types},
      {"bytes_streamed", r.bytes_streamed},
      {"core_bytes", r.core_bytes},
      {"records_sent", r.records_sent},
      {"stream_complete", r.stream_complete},
      {"close_files_called", r.close_files_called},
      {"shutdown_sent", r.shutdown_sent},
      {"killed", r.killed},
      {"bytes_injected", r.bytes_injected},
      {"waited", r.waited},
      {"parked_us", r.parked_us},
      {"wait_end", wait_end_name(r.wait_end)},
      {"server_sent_data", r.server_sent_data},
      {"unread_at_close", r.unread_at_close},
      {"wcoredump", r.wcoredump},
      {"timed_out", r.timed_out},
      {"timeline",
       {{"connected", opt(t.connected)},
        {"request_sent", opt(t.request_sent)},
        {"ack_read", opt(t.ack_read)},
        {"marker_sent", opt(t.marker_sent)},
        {"files_closed", opt(t.files_closed)},
        {"first_stream_byte", opt(t.first_stream_byte)},
        {"stream_done", opt(t.stream_done)},
        {"shutdown_sent", opt(t.shutdown_sent)},
        {"wait_done", opt(t.wait_done)},
        {"closed", opt(t.closed)}}},
  };
}

}  // namespace coredumpd::fake_kernel
