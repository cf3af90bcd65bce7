#include "store/usage.h"

namespace coredumpd {

UsageReport usage(const Index& index, int store_dirfd) {
  UsageReport rep;
  for (const GroupKind k : kGroupKinds) rep.groups[k];  // every kind present, maybe empty
  for (const auto& r : index.list_summaries()) {
    ++rep.rows;
    ++rep.states[state_name(r.state)];
    if (r.vacuumed) ++rep.vacuumed_rows;
    if (!holds_core(r)) continue;
    rep.total.bytes += r.stored_size;
    ++rep.total.cores;
    for (const GroupKind k : kGroupKinds) {
      auto& g = rep.groups[k][group_key(k, r)];
      g.bytes += r.stored_size;
      ++g.cores;
    }
  }
  if (store_dirfd >= 0) rep.filesystem = fs_space(store_dirfd);
  return rep;
}

}  // namespace coredumpd
