// WorkQueue: a fixed set of threads that run posted tasks in the order they were posted. The
// HTTP door runs request parsing, chat templates and tokenising here, so that a long prompt
// never holds up the I/O threads every other connection shares (router/http/http_frontend.h).
//
// Unbounded by itself: callers bound what they post (the door: one request per connection, and
// connections are limited).
//
// Ours rather than boost::asio::thread_pool: that one cannot say how many tasks wait (the door's
// `semmoe_router_http_work_queued` gauge), and Asio's headers are kept to the one translation
// unit that needs them (router/http/http_server.cc) for build time.
//
// Thread-safe. The destructor lets running tasks finish, drops tasks that have not started (it
// destroys them without running them) and joins the threads.
#ifndef SEMMOE_COMMON_WORK_QUEUE_H_
#define SEMMOE_COMMON_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace semmoe {

class WorkQueue {
 public:
  // InvalidArgument for fewer than 1 thread; ResourceExhausted when the system cannot start them
  // all (std::thread's system_error, which would otherwise end the process).
  static absl::StatusOr<std::unique_ptr<WorkQueue>> Create(int threads);
  // REQUIRES: threads ≥ 1. Throws std::system_error when a thread cannot start: use Create.
  explicit WorkQueue(int threads);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Post(std::function<void()> task);

  // Tasks posted and not yet started.
  int64_t queued() const;

 private:
  void Run();

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_WORK_QUEUE_H_
