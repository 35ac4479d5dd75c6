#include "common/work_queue.h"

#include <utility>

namespace semmoe {

WorkQueue::WorkQueue(int threads) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
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
          +[](WorkQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
            return q->stopping_ || !q->tasks_.empty();
          },
          this));
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace semmoe
