#include "common/work_queue.h"

#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace semmoe {

absl::StatusOr<std::unique_ptr<WorkQueue>> WorkQueue::Create(int threads) {
  if (threads < 1) return absl::InvalidArgumentError("a work queue needs at least 1 thread");
  try {
    return std::make_unique<WorkQueue>(threads);
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start ", threads, " worker threads: ", e.what()));
  }
}

WorkQueue::WorkQueue(int threads) {
  threads_.reserve(threads);
  try {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  } catch (...) {
    // The threads that did start are stopped and joined before the exception leaves: a
    // half-built queue never outlives its constructor.
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

WorkQueue::~WorkQueue() {
  std::deque<std::function<void()>> dropped;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(tasks_);
  }
  for (std::thread& t : threads_) t.join();
  // `dropped` is destroyed here, outside the lock: a task's captures may do work as they go.
}

void WorkQueue::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  tasks_.push_back(std::move(task));
}

int64_t WorkQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(tasks_.size());
}

void WorkQueue::Run() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkQueue* q)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) { return q->stopping_ || !q->tasks_.empty(); },
          this));
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace semmoe
