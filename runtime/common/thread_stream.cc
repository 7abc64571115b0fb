#include "runtime/common/thread_stream.h"

namespace bagua::runtime {

void ThreadEvent::set() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
  }
  cv_.notify_all();
}

bool ThreadEvent::test() const {
  std::lock_guard<std::mutex> lock(mu_);
  return set_;
}

void ThreadEvent::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return set_; });
}

ThreadStream::ThreadStream(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

ThreadStream::~ThreadStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

EventPtr ThreadStream::submit(std::function<void()> task) {
  auto done = std::make_shared<ThreadEvent>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(task), done});
    ++pending_;
  }
  cv_.notify_all();
  return done;
}

void ThreadStream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return pending_ == 0; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadStream::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      item.task();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    item.done->set();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    cv_.notify_all();
  }
}

}  // namespace bagua::runtime
