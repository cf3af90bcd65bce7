#include "cli/json_output.h"

namespace coredumpd::cli {

void print_json(const nlohmann::json& j, const Io& io) {
  io.out << j.dump(2, ' ', /*ensure_ascii=*/io.out_is_tty, nlohmann::json::error_handler_t::replace)
         << '\n';
}

}  // namespace coredumpd::cli
