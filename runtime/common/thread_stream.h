// Streams and events for real runtimes: a stream is an OS thread running its tasks in order.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/context.h"

namespace bagua::runtime {

class ThreadEvent final : public Event {
 public:
  void set() override;
  bool test() const override;
  void wait() override;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

class ThreadStream final : public Stream {
 public:
  explicit ThreadStream(std::string name);
  ~ThreadStream() override;  // runs what is queued, then joins
  const std::string& name() const override { return name_; }
  EventPtr submit(std::function<void()> task) override;
  void synchronize() override;

 private:
  void loop();
  struct Item {
    std::function<void()> task;
    std::shared_ptr<ThreadEvent> done;
  };
  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  size_t pending_ = 0;  // queued or running
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace bagua::runtime
