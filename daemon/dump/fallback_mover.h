// Moving the fallback's cores into the store once it can take them (core_fallback.h), and
// noticing that the store has appeared (mounted, or created by systemd-tmpfiles) since it was
// opened. docs/EARLY_BOOT.md has the design.
#pragma once

#include "daemon/dump/dump_context.h"

namespace coredumpd {

/// Points ctx.store_dirfd at the directory ctx.store_dir names now if that is another one than
/// the descriptor holds (a filesystem mounted over it or its parent, a directory that was missing
/// and now exists, one removed and made again): dup3() over the same descriptor number, so every
/// holder of the number sees the new directory. A writable index is reopened there. Returns true
/// if it changed. A few syscalls; never throws (failures are logged and leave it as it was).
bool reattach_store(DumpContext& ctx);

/// Moves every core the pending journal says is in the fallback into the store (copy, fsync, link
/// under its final name, remove the fallback copy: store/fallback_core.h), each record then
/// rewritten with extra.fallback.moved_us, replays the journal into the index, and hands each
/// moved core to ctx.on_stored. Does nothing while the store cannot take cores or the index is
/// not writable. A core whose move fails stays where it is (tried again later); one the fallback
/// lost (its file gone) is recorded as Failed with that reason. Blocking (copies, fsync): call off
/// the io thread. Never throws.
void move_fallback_cores(DumpContext& ctx);

/// Queues one look at the store on the compressor pool, unless one is queued or running:
/// reattach_store(), recover_pending_records() and move_fallback_cores(). Cheap; any thread.
void request_store_check(DumpContext& ctx);

}  // namespace coredumpd
