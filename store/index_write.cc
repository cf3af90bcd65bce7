// Group commit of the index's writes. Every insert()/update() used to be a transaction of its own
// with an fsync (synchronous=FULL); in a crash storm the records queued behind those fsyncs
// (bench/README.md, "Crash storms"). Now writers queue; one of them, the leader, commits all that
// are queued in one transaction, each in a SAVEPOINT so that one bad record fails alone, while the
// next batch gathers behind it. Every caller still returns only once its own record is durable.
#include <sqlite3.h>

#include <exception>

#include "store/index.h"
#include "store/sqlite_stmt.h"

namespace coredumpd {

using sqlite::exec;

struct Index::QueuedWrite {
  const DumpRecord* record;
  bool is_update;
  std::exception_ptr error;  ///< set by the leader before `done`
  bool done = false;         ///< guarded by queue_mu_
};

void Index::store(const DumpRecord& r, bool is_update) {
  QueuedWrite w{&r, is_update, nullptr};
  std::unique_lock lk(queue_mu_);
  queue_.push_back(&w);
  while (!w.done) {
    if (leader_) {
      queue_cv_.wait(lk);
      continue;
    }
    leader_ = true;
    const std::vector<QueuedWrite*> batch = std::exchange(queue_, {});
    lk.unlock();
    commit_batch(batch);
    lk.lock();
    for (QueuedWrite* q : batch) q->done = true;
    leader_ = false;
    queue_cv_.notify_all();
  }
  if (w.error) std::rethrow_exception(w.error);
}

void Index::commit_batch(const std::vector<QueuedWrite*>& batch) {
  std::lock_guard lock(mu_);
  const auto fail_all = [&batch] {
    for (QueuedWrite* q : batch)
      if (!q->error) q->error = std::current_exception();
  };
  try {
    require_open();
    if (batch.size() == 1) {  // the common case: no storm, no transaction around one statement
      try {
        write_one(*batch[0]->record, batch[0]->is_update);
      } catch (...) {
        batch[0]->error = std::current_exception();
      }
      return;
    }
    exec(db_, path_, "BEGIN IMMEDIATE", "begin");
  } catch (...) {
    return fail_all();
  }
  for (QueuedWrite* q : batch) {
    try {
      exec(db_, path_, "SAVEPOINT one_record", "savepoint");
      try {
        write_one(*q->record, q->is_update);
      } catch (...) {
        q->error = std::current_exception();
        exec(db_, path_, "ROLLBACK TO one_record", "roll back one record");
      }
      exec(db_, path_, "RELEASE one_record", "release savepoint");
    } catch (...) {  // the savepoint itself failed: the transaction cannot be trusted
      if (!q->error) q->error = std::current_exception();
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return fail_all();
    }
  }
  try {
    exec(db_, path_, "COMMIT", "commit");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    fail_all();  // nothing of the batch is in the index; each writer hears the commit's error
  }
}

}  // namespace coredumpd
