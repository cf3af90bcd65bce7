// `dumpctl verify`: check the store directory against the index.
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/store_commands.h"
#include "store/index.h"
#include "store/verify.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

nlohmann::json report_json(const VerifyReport& rep) {
  auto problems = nlohmann::json::array();
  for (const auto& i : rep.issues) {
    problems.push_back({
        {"problem", verify_problem_name(i.problem)},
        {"file", bytes_to_json(i.name)},  // file names are bytes: a planted one need not be UTF-8
        {"id", i.id.empty() ? nlohmann::json(nullptr) : nlohmann::json(i.id)},
        {"detail", bytes_to_json(i.detail)},
    });
  }
  return {
      {"ok", rep.ok()},
      {"files", rep.files},
      {"cores", rep.cores},
      {"deep_checked", rep.deep_checked},
      {"problems", std::move(problems)},
  };
}

}  // namespace

int cmd_verify(const GlobalOptions& g, const VerifyOptions& o, const Io& io) {
  const Index index(g.store, /*writable=*/false);
  const UniqueFd dir = open_store_dir(g.store);
  const VerifyReport rep = verify(index, dir.get(), o.deep);

  if (o.json) {
    print_json(report_json(rep), io);
  } else {
    for (const auto& i : rep.issues) {
      io.out << verify_problem_name(i.problem) << ": " << escape_for_display(i.name) << ": "
             << escape_for_display(i.detail) << '\n';
    }
    io.out << "Checked " << rep.files << (rep.files == 1 ? " file" : " files") << " and "
           << rep.cores << (rep.cores == 1 ? " core" : " cores");
    if (o.deep) io.out << " (" << rep.deep_checked << " read in full)";
    io.out << ": ";
    if (rep.ok()) {
      io.out << "no problems found.\n";
    } else {
      io.out << rep.issues.size() << (rep.issues.size() == 1 ? " problem" : " problems")
             << " found.\n";
    }
  }
  if (!io.out) return 1;
  return rep.ok() ? 0 : 1;
}

}  // namespace coredumpd::cli
