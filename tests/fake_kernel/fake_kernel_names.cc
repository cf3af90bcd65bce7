// The names of the fake kernel's points, outcomes and wait ends (fake_kernel.h), as the CLI and the
// JSON result spell them.
#include "tests/fake_kernel/fake_kernel.h"

#include <array>

#include "util/enum_names.h"

namespace coredumpd::fake_kernel {

namespace {

constexpr std::array<EnumName<Point>, 8> kPointNames{{
    {Point::Connected, "connected"},
    {Point::RequestSent, "request-sent"},
    {Point::AckRead, "ack-read"},
    {Point::MarkerSent, "marker-sent"},
    {Point::StreamOffset, "stream-offset"},
    {Point::StreamDone, "stream-done"},
    {Point::ShutdownSent, "shutdown-sent"},
    {Point::BeforeClose, "before-close"},
}};

}  // namespace

std::string_view point_name(Point point) { return name_of(kPointNames, point).value_or("?"); }

std::optional<Point> parse_point(std::string_view name) { return value_of(kPointNames, name); }

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::ConnectFailed: return "connect_failed";
    case Outcome::RequestFailed: return "request_failed";
    case Outcome::HungUpBeforeAck: return "hung_up_before_ack";
    case Outcome::Refused: return "refused";
    case Outcome::MarkerFailed: return "marker_failed";
    case Outcome::Rejected: return "rejected";
    case Outcome::Dumped: return "dumped";
    case Outcome::NotReleased: return "not_released";
    case Outcome::StreamAborted: return "stream_aborted";
    case Outcome::Killed: return "killed";
    case Outcome::TimedOut: return "timed_out";
    case Outcome::Error: return "error";
  }
  return "?";
}

std::string_view wait_end_name(WaitEnd end) {
  switch (end) {
    case WaitEnd::None: return "none";
    case WaitEnd::Eof: return "eof";
    case WaitEnd::Reset: return "reset";
    case WaitEnd::Data: return "data";
    case WaitEnd::Timeout: return "timeout";
    case WaitEnd::Error: return "error";
  }
  return "?";
}

}  // namespace coredumpd::fake_kernel
